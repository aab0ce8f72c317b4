package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// CPU profiles of the operator and of the API server, over a span of a run.

// profileCPU profiles a process's CPU, through the profiler at base (an
// address that serves /debug/pprof/), from now until the returned function
// is called, in consecutive parts of two seconds, and then writes the parts
// merged into one profile at path (the last part runs to its end, so the
// profile runs on for up to two seconds). Calls after the first return the
// first's answer.
func profileCPU(ctx context.Context, hc *http.Client, base, path string) (stop func() error) {
	done := make(chan struct{})
	result := make(chan error, 1)
	stop = sync.OnceValue(func() error {
		close(done)
		return <-result
	})
	go func() {
		var parts []*profile.Profile
		err := func() error {
			for {
				p, err := cpuProfile(ctx, hc, base, 2)
				if err != nil {
					return err
				}
				parts = append(parts, p)
				select {
				case <-done:
					return nil
				default:
				}
			}
		}()
		if err == nil {
			err = writeMerged(path, parts)
		}
		result <- err
	}()
	return stop
}

// profileAPIServer is profileCPU for the API server.
func (e *env) profileAPIServer(ctx context.Context, path string) (stop func() error) {
	hc, err := rest.HTTPClientFor(e.adminCfg)
	if err != nil {
		return func() error { return err }
	}
	return profileCPU(ctx, hc, e.adminCfg.Host, path)
}

// cpuProfile reads a profile of the next seconds of CPU time of the
// process whose profiler is at base.
func cpuProfile(ctx context.Context, hc *http.Client, base string, seconds int) (p *profile.Profile, err error) {
	err = httpGet(ctx, hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), func(r io.Reader) error {
		p, err = profile.Parse(r)
		return err
	})
	return p, err
}

// writeMerged writes the profiles merged into one at path.
func writeMerged(path string, parts []*profile.Profile) error {
	p, err := profile.Merge(parts)
	if err != nil {
		return err
	}
	return writeFile(path, p.Write)
}
