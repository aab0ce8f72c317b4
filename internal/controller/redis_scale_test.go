package controller_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// silentNodes are Redis nodes that answer nothing: every INFO waits out
// the call's timeout (or the pass's end) and fails, as a frozen node's
// does. They count the clusters whose passes wait on them at once, by the
// third byte of the nodes' addresses (one per cluster).
type silentNodes struct {
	redisnode.Nodes
	wait time.Duration

	mu       sync.Mutex
	inFlight map[string]int
	most     int
}

func (s *silentNodes) Info(ctx context.Context, addr string) (redisnode.Info, error) {
	cluster := strings.Split(addr, ".")[2]
	s.mu.Lock()
	s.inFlight[cluster]++
	s.most = max(s.most, len(s.inFlight))
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.inFlight[cluster]--; s.inFlight[cluster] == 0 {
			delete(s.inFlight, cluster)
		}
		s.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
	case <-time.After(s.wait):
	}
	return redisnode.Info{}, fmt.Errorf("read %s: i/o timeout", addr)
}

func (s *silentNodes) clustersAtOnce() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// A pass that waits on a cluster's silent nodes holds no worker that
// another cluster's pass needs: with one worker for the declarative kinds
// (--max-concurrent-reconciles=1), the passes of three clusters whose
// every node is silent wait on their nodes at the same time.
func TestRedisPassesWaitingOnSilentNodesRunAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	const clusters = 3
	for c := range clusters {
		name := fmt.Sprintf("s%d", c)
		testenv.Create(t, k8s, &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}})
		for i := range 3 {
			ip := fmt.Sprintf("10.9.%d.%d", c+1, i+1)
			// The operator caches the pods it manages alone.
			labels := redisenterprisecluster.Selector(name)
			labels[resources.LabelManagedBy] = resources.ManagedBy
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: redisenterprisecluster.PodName(name, i), Labels: labels},
				Spec:       corev1.PodSpec{NodeName: nodeOf(ns, i), Containers: []corev1.Container{{Name: "redis", Image: "redis"}}},
			}
			testenv.Create(t, k8s, pod)
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			if err := k8s.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	silent := &silentNodes{Nodes: &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, wait: 3 * time.Second, inFlight: map[string]int{}}
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{
		MaxConcurrentReconciles: 1,
		RedisNodes:              func(string, *tls.Config, map[string]bool) redisnode.Nodes { return silent },
	}})
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		got := silent.clustersAtOnce()
		return got == clusters, fmt.Sprintf("at most %d of %d clusters' passes waited on their silent nodes at once", got, clusters)
	})
}
