package realpods

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/test/testenv"
)

// traffic sends GET requests to a URL back to back, as a user's client
// would during a change, and counts those that fail (an error or a status
// other than 200) and the answers that hold a given text.
type traffic struct {
	url  string
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	requests int
	failures []string
	// firstWith is when an answer first held the text looked for.
	firstWith time.Time
}

// startTraffic sends requests to url until stopped; an answer holding
// marker is noted.
func startTraffic(url, marker string) *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{url: url, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for ctx.Err() == nil {
			body, err := testenv.Get(hc, url)
			if ctx.Err() != nil {
				return
			}
			tr.mu.Lock()
			tr.requests++
			if err != nil {
				tr.failures = append(tr.failures, err.Error())
			} else if tr.firstWith.IsZero() && strings.Contains(body, marker) {
				tr.firstWith = time.Now()
			}
			tr.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return tr
}

// Stop ends the traffic and returns the number of requests and the failures.
func (tr *traffic) Stop() (int, []string) {
	tr.stop()
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.requests, tr.failures
}

// SawMarker reports when an answer first held the marker (zero if none has).
func (tr *traffic) SawMarker() time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.firstWith
}

// memcachedCommand sends one command of memcached's text protocol to addr
// and returns its answer: up to "END" for get and stats, one line
// otherwise.
func memcachedCommand(addr, command string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(command + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	multiLine := strings.HasPrefix(command, "get ") || command == "stats"
	var answer strings.Builder
	for {
		line, err := r.ReadString('\n')
		answer.WriteString(line)
		if err != nil {
			return answer.String(), err
		}
		if !multiLine || line == "END\r\n" || strings.HasSuffix(line, "ERROR\r\n") {
			return answer.String(), nil
		}
	}
}

// waitCondition waits until obj's condition of type condType has the given
// status and reason, and returns it.
func waitCondition(t *testing.T, c client.Client, obj client.Object, conditionsOf func() []metav1.Condition,
	condType string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(conditionsOf(), condType)
		if cond == nil {
			return false, "no " + condType + " condition"
		}
		got = *cond
		return cond.Status == status && cond.Reason == reason, fmt.Sprintf("%s=%s %s: %s", condType, cond.Status, cond.Reason, cond.Message)
	})
	return got
}

// waitServesContaining waits until GET url answers 200 with a body that
// holds want.
func waitServesContaining(t *testing.T, url, want string, timeout time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	testenv.Eventually(t, timeout, func() (bool, string) {
		body, err := testenv.Get(hc, url)
		return err == nil && strings.Contains(body, want), fmt.Sprintf("%s: %q (%v)", url, body, err)
	})
}

// freezePod stops every process of the pod name (SIGSTOP): it stays, as
// a member that hangs does, answering nothing. The test thaws it when it
// ends.
func freezePod(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	pids := podProcesses(t, c, namespace, name)
	if len(pids) == 0 {
		t.Fatalf("no process of pod %s found", name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stop process %d of pod %s: %v", pid, name, err)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
}

// thawPod resumes the processes of the pod name (SIGCONT).
func thawPod(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	for _, pid := range podProcesses(t, c, namespace, name) {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatalf("resume process %d of pod %s: %v", pid, name, err)
		}
	}
}

// podProcesses returns the processes on this machine of the pod name:
// those in a cgroup of the pod's uid.
func podProcesses(t *testing.T, c client.Client, namespace, name string) []int {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	// The cgroupfs driver names a pod's cgroup pod<uid>; systemd's, with
	// the dashes as underscores.
	marks := []string{"pod" + string(pod.UID), "pod" + strings.ReplaceAll(string(pod.UID), "-", "_")}
	files, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if !strings.Contains(string(data), marks[0]) && !strings.Contains(string(data), marks[1]) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// notReadyWatch counts, every 200 ms, the pods of a selector that are not
// ready, and keeps the most seen at once.
type notReadyWatch struct {
	stop context.CancelFunc
	done chan struct{}
	most int
}

// watchNotReady starts a notReadyWatch of the pods of selector in ns.
func watchNotReady(c client.Client, ns string, selector map[string]string) *notReadyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &notReadyWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			pods := &corev1.PodList{}
			if c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(selector)) == nil {
				n := 0
				for i := range pods.Items {
					if !podReady(&pods.Items[i]) {
						n++
					}
				}
				w.most = max(w.most, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return w
}

// Stop ends the watch and returns the most pods seen not ready at once.
func (w *notReadyWatch) Stop() int {
	w.stop()
	<-w.done
	return w.most
}

// watchReadyReasons polls e's Ready condition every 200 ms until the
// returned function is called, which returns how often each status and
// reason ("False NoSpace") was seen.
func watchReadyReasons(c client.Client, e *etcdv1beta2.EtcdCluster) func() map[string]int {
	reasons := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			got := &etcdv1beta2.EtcdCluster{}
			if c.Get(ctx, client.ObjectKeyFromObject(e), got) == nil {
				if r := findCondition(got.Status.Conditions, conditions.Ready); r != nil {
					reasons[string(r.Status)+" "+r.Reason]++
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() map[string]int {
		cancel()
		<-done
		return reasons
	}
}
