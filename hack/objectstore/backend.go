package main

import (
	"context"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
)

// backend is the in-memory backend, listing as S3 does when a client sends
// an empty delimiter (minio-go does, on every recursive listing): as if it
// sent none, where gofakes3 alone would list nothing.
type backend struct{ *s3mem.Backend }

func (b backend) ListBucket(ctx context.Context, name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix != nil && prefix.HasDelimiter && prefix.Delimiter == "" {
		p := *prefix
		p.HasDelimiter = false
		prefix = &p
	}
	return b.Backend.ListBucket(ctx, name, prefix, page)
}
