package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/test/browser"
	"github.com/app-operator/app-operator/test/testenv"
)

// In a real browser: a wrong password is refused; the right one shows the
// page with the primary; "Back up now" annotates the cluster.
func TestBrowserLogsInSeesThePrimaryAndTakesABackup(t *testing.T) {
	ctx := browser.Start(t, 60*time.Second)
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
	browser.Screenshot(t, ctx, "console-login-refused")
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
	browser.Screenshot(t, ctx, "console-overview")

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
	browser.Screenshot(t, ctx, "console-backup")

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
