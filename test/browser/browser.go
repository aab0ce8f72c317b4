// Package browser starts a headless Chromium for the tests that look at a
// page as a user does (the Redis console's), and writes their screenshots
// into docs/ when asked to.
package browser

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshots, or CONSOLE_SCREENSHOTS=1, has the browser tests write their
// screenshots (see Screenshot).
var screenshots = flag.Bool("screenshots", false, "write the browser tests' screenshots to docs/images/")

// Start returns a browser context of a headless Chromium that stops with
// the test, each of its actions bounded by timeout in all. It skips the
// test when no Chromium can be found or started.
func Start(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome or headless-shell on PATH): the browser tests need one, e.g. Debian's chromium package (hack/chromium.sh)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900),
		chromedp.Flag("ignore-certificate-errors", true))
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Skipf("Chromium %s cannot start: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	return ctx
}

// Screenshot writes the page to docs/images/name.png, docs being found
// from the test's package folder, when the test runs with -screenshots or
// CONSOLE_SCREENSHOTS=1; otherwise it does nothing.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots && os.Getenv("CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot(t), "docs", "images", name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// repoRoot is the folder of go.mod above the working folder (a test runs
// in its package's folder).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}
