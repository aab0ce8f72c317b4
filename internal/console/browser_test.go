package console_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/test/testenv"
)

// screenshots, or CONSOLE_SCREENSHOTS=1, has the browser test write its
// screenshots to docs/images/console-*.png.
var screenshots = flag.Bool("screenshots", false, "write the browser test's screenshots to docs/images/console-*.png")

// chromium returns a browser context of a headless Chromium, skipping the
// test when none can be found or started.
func chromium(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome or headless-shell on PATH): the browser test needs one, e.g. Debian's chromium package")
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
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelTimeout)
	return ctx
}

// screenshot writes the page to docs/images/console-name.png when asked
// for.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots && os.Getenv("CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "images", "console-"+name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// In a real browser: a wrong password is refused; the right one shows the
// page with the primary; "Back up now" annotates the cluster.
func TestBrowserLogsInSeesThePrimaryAndTakesABackup(t *testing.T) {
	ctx := chromium(t)
	f := newFixture(t, options{name: "example", backup: true, refresh: time.Second})
	rec := f.cluster(t)
	now := time.Now()
	rec.Status.PrimaryHistory = []redisv1alpha1.PrimaryChange{
		{From: "example-1", To: "example-0", Reason: "Switchover", Time: metav1.NewTime(now.Add(-20 * time.Minute))},
		{From: "example-0", To: "example-1", Reason: "Failover", Time: metav1.NewTime(now.Add(-3 * time.Hour))},
	}
	rec.Status.BackupInfo = &redisv1alpha1.BackupInfo{BackupStatus: redisv1alpha1.BackupStatusSucceeded, BackupInterval: 3600,
		LastBackupTime: &metav1.Time{Time: now.Add(-14 * time.Minute)}, LastScheduleTime: &metav1.Time{Time: now.Add(-15 * time.Minute)},
		LastBackup: "s3://backups/example/20261130T000000Z.rdb"}
	rec.Status.LastSwitchover = &switchover.Status{Request: "example-0/1", Target: "example-0", Outcome: switchover.Done, Message: "example-0 is the primary", Time: metav1.NewTime(now.Add(-20 * time.Minute))}
	if err := k8s.Status().Update(context.Background(), rec); err != nil {
		t.Fatal(err)
	}

	// Refused.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.ui.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), username),
		chromedp.SendKeys(chromedp.CSS("#password"), "not-the-password"),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
	); err != nil {
		t.Fatal(err)
	}
	refusal, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#login-error")))
	if err != nil || !strings.Contains(refusal, "Wrong username or password") {
		t.Errorf("the refusal: %q %v", refusal, err)
	}
	screenshot(t, ctx, "login-refused")
	if at, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(at, "/login") {
		t.Errorf("after a refused login the browser is at %s, want the login page", at)
	}

	// Logged in: the page shows the primary, the nodes and their figures.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#username"), username),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tbody tr[data-node="example-2"]`)),
	); err != nil {
		t.Fatal(err)
	}
	primary, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#primary")))
	if err != nil || primary != "example-0" {
		t.Errorf("the page's primary: %q %v, want example-0", primary, err)
	}
	if nodes, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#nodes"))); !strings.Contains(nodes, "1250") || !strings.Contains(nodes, "100 B / 1 s") {
		t.Errorf("the nodes table does not show the nodes' INFO:\n%s", nodes)
	}
	screenshot(t, ctx, "overview")

	// Back up now.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#backup-now")),
		chromedp.WaitVisible(chromedp.CSS("#action-result.ok")),
	); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := f.cluster(t).Annotations[redisv1alpha1.BackupNowAnnotation]
		return strings.HasPrefix(v, "console-"), "annotation " + redisv1alpha1.BackupNowAnnotation + " = " + v
	})
	result, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#action-result")))
	if !strings.Contains(result, "asked for") {
		t.Errorf("the last action's result: %q", result)
	}
	screenshot(t, ctx, "backup")

	// A failover shows within the refresh interval, without a reload.
	rec = f.cluster(t)
	rec.Status.Primary = "example-1"
	rec.Status.Nodes[0].Role, rec.Status.Nodes[0].Healthy = redisv1alpha1.RoleUnknown, false
	rec.Status.Nodes[1].Role = redisv1alpha1.RolePrimary
	rec.Status.PrimaryHistory = append([]redisv1alpha1.PrimaryChange{{From: "example-0", To: "example-1", Reason: "Failover", Time: metav1.Now()}}, rec.Status.PrimaryHistory...)
	if err := k8s.Status().Update(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	// The page's interval, and the time of one overview request.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("primary").textContent === "example-1"`,
		chromedp.WithPollingTimeout(f.refresh+time.Second))); err != nil {
		t.Errorf("the page did not show the new primary within %s: %v", f.refresh+time.Second, err)
	}
	t.Logf("the page showed the failover %s after it", time.Since(changed).Round(time.Millisecond))
	if history, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#history tbody tr"))); !strings.Contains(history, "Failover") {
		t.Errorf("the history's newest row: %q, want the failover", history)
	}
}
