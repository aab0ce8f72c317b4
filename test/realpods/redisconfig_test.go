package realpods

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// setRedisConfig merges cfg into spec.redisConfig.
func (r *redisCluster) setRedisConfig(cfg map[string]string) {
	r.t.Helper()
	value, err := json.Marshal(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	patch := fmt.Appendf(nil, `{"spec":{"redisConfig":%s}}`, value)
	if err := r.c.Patch(context.Background(), r.rec, client.RawPatch(types.MergePatchType, patch)); err != nil {
		r.t.Fatal(err)
	}
}

// configOf is a parameter of the named node, as CONFIG GET answers it.
func (r *redisCluster) configOf(name, key string) string {
	c := r.clientOfPod(name)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := c.ConfigGet(ctx, key).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	return kv[key]
}

// templateHash is the hash of redis.conf on the StatefulSet's template.
func (r *redisCluster) templateHash() string {
	r.t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := r.c.Get(context.Background(), client.ObjectKeyFromObject(r.rec), sts); err != nil {
		r.t.Fatal(err)
	}
	return sts.Spec.Template.Annotations[redisenterprisecluster.ConfigHashAnnotation]
}

// maxmemory-policy set in spec.redisConfig reaches every running node
// (CONFIG GET says so) and the ConfigMap the pods start from, without a
// pod replaced or restarted and without a change of the pod template; a
// value Redis refuses is reported, naming the parameter.
func TestRedisLiveConfigSetWithoutARestart(t *testing.T) {
	c, _, r := startCell(t, "liveconf", false)
	pods, hash := r.podsNow(), r.templateHash()
	nodes := append([]string{r.rec.Status.Primary}, r.replicas()...)
	set := time.Now()
	r.setRedisConfig(map[string]string{"maxmemory-policy": "allkeys-lru", "timeout": "300"})
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		got := make([]string, 0, len(nodes))
		ok := true
		for _, n := range nodes {
			p, to := r.configOf(n, "maxmemory-policy"), r.configOf(n, "timeout")
			ok = ok && p == "allkeys-lru" && to == "300"
			got = append(got, fmt.Sprintf("%s: %s, timeout %s", n, p, to))
		}
		return ok, strings.Join(got, "; ")
	})
	applied := time.Since(set)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		r.refresh()
		cond := meta.FindStatusCondition(r.rec.Status.Conditions, redisv1alpha1.ConditionRedisConfigApplied)
		return cond != nil && cond.Status == "True", fmt.Sprintf("%+v", cond)
	})
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: r.rec.Namespace, Name: redisenterprisecluster.ConfigMapName(r.rec.Name)}, cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data[redisenterprisecluster.ConfigFile]; !strings.Contains(conf, "maxmemory-policy allkeys-lru\n") {
		t.Errorf("the ConfigMap's redis.conf lacks maxmemory-policy allkeys-lru:\n%s", conf)
	}

	// A value Redis refuses.
	r.setRedisConfig(map[string]string{"maxmemory-policy": "most-lru"})
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		redisv1alpha1.ConditionRedisConfigApplied, metav1.ConditionFalse, redisv1alpha1.ReasonParameterRefused, 2*time.Minute)
	if !strings.Contains(cond.Message, "spec.redisConfig.maxmemory-policy") {
		t.Errorf("%s: %s, want it to name spec.redisConfig.maxmemory-policy", cond.Reason, cond.Message)
	}
	for _, n := range nodes {
		if got := r.configOf(n, "maxmemory-policy"); got != "allkeys-lru" {
			t.Errorf("%s runs maxmemory-policy %s after a value it refused, want allkeys-lru kept", n, got)
		}
	}
	time.Sleep(10 * time.Second)
	if now := r.podsNow(); !maps.Equal(now, pods) {
		t.Errorf("pods %v, want %v: none replaced or restarted", now, pods)
	}
	if now := r.templateHash(); now != hash {
		t.Errorf("the pod template's redis.conf hash changed: %s -> %s", hash, now)
	}
	r.waitRunning(time.Minute)
	t.Logf("maxmemory-policy and timeout on %d nodes %v after the change, no pod restarted; refused value: %s", len(nodes), applied.Round(time.Millisecond), cond.Message)
}
