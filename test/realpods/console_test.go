package realpods

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/browser"
	"github.com/app-operator/app-operator/test/testenv"
)

// consoleRefresh is the console page's refresh interval (the console's
// default, which the operator's Deployment keeps).
const consoleRefresh = 5 * time.Second

// The console of a Redis cluster on real pods, as its users reach it: the
// operator runs it behind <name>-ui. Its REST API answers with the
// cluster's credentials and refuses a request without them or with a
// wrong password; in a browser, a wrong password is refused, the right
// one shows the primary and the nodes' figures read from Redis, "Back up
// now" takes a backup the operator records, and a failover (the primary's
// pod deleted) shows on the page within its refresh interval.
func TestRedisConsoleOnRealPods(t *testing.T) {
	ctx := context.Background()
	c, r, _, s3 := startRedisBackupSource(t, "console")
	r.setBackup(&redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}})
	r.waitBackupStatus(redisv1alpha1.BackupStatusSucceeded, 3*time.Minute)
	primary := r.waitRunning(redisReadyTimeout)
	username, password := consoleCredentials(t, c, r.rec)
	ip := waitConsole(t, c, r.rec)
	ui, api := "https://"+net.JoinHostPort(ip, "8443"), "https://"+net.JoinHostPort(ip, "9443")

	// The REST API.
	for _, tc := range []struct {
		what, user, pass string
		want             int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"a wrong password", username, password + "x", http.StatusUnauthorized},
		{"the cluster's credentials", username, password, http.StatusOK},
	} {
		code, body := consoleGet(t, api+"/v1/cluster", tc.user, tc.pass)
		if code != tc.want {
			t.Errorf("GET /v1/cluster with %s: %d, want %d: %s", tc.what, code, tc.want, body)
		}
		if code == http.StatusOK && !strings.Contains(body, `"`+primary+`"`) {
			t.Errorf("GET /v1/cluster does not name the primary %s: %s", primary, body)
		}
	}
	code, body := consoleGet(t, api+"/v1/nodes", username, password)
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(body), &nodes); code != http.StatusOK || err != nil || len(nodes) != 3 {
		t.Errorf("GET /v1/nodes: %d %v, want the 3 nodes: %s", code, err, body)
	}

	// In a browser.
	b := browser.Start(t, 5*time.Minute)
	if err := chromedp.Do(b,
		chromedp.Navigate(ui+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), username),
		chromedp.SendKeys(chromedp.CSS("#password"), "not-"+password),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
		chromedp.SendKeys(chromedp.CSS("#username"), username),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tbody tr[data-node="`+primary+`"]`)),
	); err != nil {
		t.Fatalf("logging in: %v", err)
	}
	if shown, err := chromedp.Run(b, chromedp.Text(chromedp.CSS("#primary"))); err != nil || shown != primary {
		t.Errorf("the page's primary: %q %v, want %s", shown, err, primary)
	}
	table, err := chromedp.Run(b, chromedp.Text(chromedp.CSS("#nodes")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "MiB") {
		t.Errorf("the nodes table shows no memory read from the nodes:\n%s", table)
	}

	// Back up now: the operator takes the backup and records the request.
	before := r.rec.Status.BackupInfo.LastBackup
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS("#backup-now")), chromedp.WaitVisible(chromedp.CSS("#action-result.ok"))); err != nil {
		t.Fatalf("backing up: %v", err)
	}
	testenv.EventuallyInNamespace(t, c, r.rec.Namespace, 3*time.Minute, func() (bool, string) {
		r.refresh()
		asked, info := r.rec.Annotations[redisv1alpha1.BackupNowAnnotation], r.rec.Status.BackupInfo
		return asked != "" && info.LastRequest == asked && info.BackupStatus == redisv1alpha1.BackupStatusSucceeded && info.LastBackup != before,
			fmt.Sprintf("asked %q; backupInfo: request %q, %s, last %s (before %s)", asked, info.LastRequest, info.BackupStatus, info.LastBackup, before)
	})
	taken := r.rec.Status.BackupInfo.LastBackup
	t.Logf("the backup asked for on the page: %s", taken)
	// The page shows it within its refresh interval.
	if _, err := chromedp.Run(b, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("backup").textContent.includes(%q)`, path.Base(taken)),
		chromedp.WithPollingTimeout(consoleRefresh+3*time.Second))); err != nil {
		t.Errorf("the page did not show the backup %s within %s: %v", taken, consoleRefresh+3*time.Second, err)
	}
	browser.Screenshot(t, b, "console-real-pods")

	// A failover shows within the page's refresh interval.
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.rec.Namespace, Name: primary}}); err != nil {
		t.Fatal(err)
	}
	var next string
	testenv.EventuallyInNamespace(t, c, r.rec.Namespace, redisFailoverBound, func() (bool, string) {
		r.refresh()
		next = r.rec.Status.Primary
		return next != "" && next != primary, "status.primary " + next
	})
	changed := time.Now()
	// The page's interval, the time of an overview request and of the
	// test's look at the status.
	bound := consoleRefresh + 3*time.Second
	if _, err := chromedp.Run(b, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("primary").textContent === %q`, next),
		chromedp.WithPollingTimeout(bound))); err != nil {
		t.Errorf("the page did not show the new primary %s within %s: %v", next, bound, err)
	}
	t.Logf("the page showed the failover to %s %s after the status did", next, time.Since(changed).Round(time.Millisecond))
}

// consoleCredentials are the username and password of the cluster's
// Secret, the console's login.
func consoleCredentials(t *testing.T, c client.Client, rec *redisv1alpha1.RedisEnterpriseCluster) (string, string) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(rec), secret); err != nil {
		t.Fatal(err)
	}
	return string(secret.Data[redisenterprisecluster.SecretUsername]), string(secret.Data[redisenterprisecluster.SecretPassword])
}

// waitConsole waits for the console's Deployment to be available and
// returns the address of the <name>-ui Service.
func waitConsole(t *testing.T, c client.Client, rec *redisv1alpha1.RedisEnterpriseCluster) string {
	t.Helper()
	key := client.ObjectKey{Namespace: rec.Namespace, Name: redisenterprisecluster.UIServiceName(rec.Name)}
	testenv.EventuallyInNamespace(t, c, rec.Namespace, 3*time.Minute, func() (bool, string) {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), key, d); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d of the console's replicas available", d.Status.AvailableReplicas)
	})
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), key, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// consoleGet GETs url with basic auth (none when user is empty) and
// returns the status code and the body. The console's certificate is
// issued by the operator for the Service's names, which the test does not
// dial by.
func consoleGet(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
