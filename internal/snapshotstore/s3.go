package snapshotstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/app-operator/app-operator/api/conditions"
)

// S3Options says how to reach S3.
type S3Options struct {
	// Endpoint is the URL of the S3 service (http:// or https://); empty
	// means AWS.
	Endpoint string
	// ForcePathStyle addresses buckets as <endpoint>/<bucket> rather than
	// <bucket>.<endpoint>.
	ForcePathStyle bool
	// Region is the bucket's region; empty lets the client find it.
	Region string
	// CredentialsFile is an AWS shared credentials file whose profile
	// "default" holds the keys. Empty: AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY from the environment.
	CredentialsFile string
	// CredentialsSecret names the Secret the credentials come from (the
	// file, or the two environment variables when there is no file), for
	// the message when they are missing; empty outside a pod.
	CredentialsSecret string
}

// The environment variables of the S3 credentials when there is no
// credentials file.
const (
	AccessKeyEnv = "AWS_ACCESS_KEY_ID"
	SecretKeyEnv = "AWS_SECRET_ACCESS_KEY"
)

// s3PartSize is the size of the parts a snapshot is uploaded in: a stream of
// unknown length is buffered one part at a time.
const s3PartSize = 16 << 20

// s3Store keeps backups as objects of one bucket; names are object keys.
type s3Store struct {
	client *minio.Client
	bucket string
}

func newS3Store(bucket string, opts S3Options) (*s3Store, error) {
	host, secure := "s3.amazonaws.com", true
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, Failure(conditions.ReasonInvalidArgument, "the S3 endpoint %q is not an http:// or https:// URL", opts.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if opts.CredentialsFile != "" {
		if _, err := os.Stat(opts.CredentialsFile); err != nil {
			if opts.CredentialsSecret != "" {
				return nil, Failure(conditions.ReasonCredentialsMissing, "the Secret %q (spec.s3.awsSecret) is missing or has no key %q", opts.CredentialsSecret, filepath.Base(opts.CredentialsFile))
			}
			return nil, Failure(conditions.ReasonInvalidArgument, "cannot read the AWS credentials file: %w", err)
		}
		creds = credentials.NewFileAWSCredentials(opts.CredentialsFile, "default")
	} else {
		if opts.CredentialsSecret != "" && (os.Getenv(AccessKeyEnv) == "" || os.Getenv(SecretKeyEnv) == "") {
			return nil, Failure(conditions.ReasonCredentialsMissing, "the Secret %q is missing or has no keys %s and %s", opts.CredentialsSecret, AccessKeyEnv, SecretKeyEnv)
		}
		creds = credentials.NewEnvAWS()
	}
	lookup := minio.BucketLookupAuto
	if opts.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: opts.Region, BucketLookup: lookup})
	if err != nil {
		return nil, Failure(conditions.ReasonInvalidArgument, "cannot set up the S3 client: %w", err)
	}
	return &s3Store{client: client, bucket: bucket}, nil
}

func (s *s3Store) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.failure(err, "cannot reach the bucket "+s.bucket)
	}
	if !ok {
		return &Error{Reason: conditions.ReasonBucketNotFound, Err: fmt.Errorf("the bucket %q does not exist", s.bucket)}
	}
	return nil
}

func (s *s3Store) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	info, err := s.client.PutObject(ctx, s.bucket, name, r, -1, minio.PutObjectOptions{PartSize: s3PartSize, ContentType: "application/octet-stream"})
	if err != nil {
		// A multipart upload that failed is never completed, so no object
		// appears under name; drop its parts.
		_ = s.client.RemoveIncompleteUpload(context.WithoutCancel(ctx), s.bucket, name)
		return 0, s.failure(err, "cannot upload the snapshot to "+s.Display(name))
	}
	return info.Size, nil
}

func (s *s3Store) Exists(ctx context.Context, name string) (bool, error) {
	_, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return false, nil
	}
	return false, s.failure(err, "cannot look up "+s.Display(name))
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return nil, s.failure(obj.Err, "cannot list "+s.Display(prefix))
		}
		names = append(names, obj.Key)
	}
	return names, nil
}

func (s *s3Store) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.failure(err, "cannot read "+s.Display(name))
	}
	return obj, nil
}

func (s *s3Store) Remove(ctx context.Context, name string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return s.failure(err, "cannot remove "+s.Display(name))
	}
	return nil
}

func (s *s3Store) Display(name string) string { return "s3://" + s.bucket + "/" + name }

// failure gives an S3 error its reason.
func (s *s3Store) failure(err error, what string) error {
	var netErr net.Error
	switch code := minio.ToErrorResponse(err).Code; {
	case code == minio.NoSuchBucket:
		return &Error{Reason: conditions.ReasonBucketNotFound, Err: fmt.Errorf("%s: the bucket %q does not exist", what, s.bucket)}
	case code == minio.NoSuchKey:
		return &Error{Reason: conditions.ReasonNotFound, Err: fmt.Errorf("%s: no such object", what)}
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "InvalidToken" || code == "ExpiredToken":
		return &Error{Reason: conditions.ReasonAccessDenied, Err: fmt.Errorf("%s: access denied (%s)", what, code)}
	case code == "EntityTooLarge" || code == "QuotaExceeded":
		return &Error{Reason: conditions.ReasonTargetFull, Err: fmt.Errorf("%s: the target is full (%s)", what, code)}
	case errors.As(err, &netErr):
		return &Error{Reason: conditions.ReasonUnreachable, Err: fmt.Errorf("%s: the S3 endpoint is unreachable: %w", what, err)}
	}
	return Failure(conditions.ReasonFailed, "%s: %w", what, err)
}
