package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// The real node's machine-wide lock: one real node per machine at a time.

// lockRealNode takes the machine-wide lock of the real node, waiting for
// another cluster's node to stop.
func lockRealNode(ctx context.Context, progress io.Writer) (*os.File, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", realNodeLock, err)
		}
		if !said {
			fmt.Fprintln(progress, "Waiting for another cluster's real node to stop (lock", realNodeLock+")")
			said = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("another cluster's real node holds %s: %w", realNodeLock, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
