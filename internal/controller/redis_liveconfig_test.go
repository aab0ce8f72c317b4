package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// setRedisConfig sets spec.redisConfig.
func (f *redisFixture) setRedisConfig(cfg redisv1alpha1.RedisConfig) {
	f.t.Helper()
	get(f.t, f.obj)
	f.obj.Spec.RedisConfig = cfg
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		f.t.Fatal(err)
	}
}

// templateAndConf are the StatefulSet's pod template hash annotation and
// the ConfigMap's redis.conf.
func (f *redisFixture) templateAndConf() (string, string) {
	f.t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r"}}
	get(f.t, sts)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.ConfigMapName("r")}}
	get(f.t, cm)
	return sts.Spec.Template.Annotations[redisenterprisecluster.ConfigHashAnnotation], cm.Data[redisenterprisecluster.ConfigFile]
}

// Parameters Redis takes at run time are set on every node (CONFIG SET),
// the primary first, and read back (CONFIG GET): a value Redis reports in
// another form is not set again. They reach the ConfigMap's redis.conf,
// but not the pod template: no pod is replaced. At rest nothing is set
// or written.
func TestRedisLiveConfigIsSetOnEveryNodeWithoutARoll(t *testing.T) {
	f, _ := switchoverFixture(t)
	for i := range 3 {
		f.redis.Nodes[nodeAddr(i)].Reports = map[string]string{"100mb": "104857600"}
	}
	template, _ := f.templateAndConf()
	f.setRedisConfig(redisv1alpha1.RedisConfig{"maxmemory-policy": "allkeys-lru", "maxmemory": "100mb"})
	for range 5 {
		f.mustPass()
	}
	want := make([]string, 0, 6)
	for _, i := range []int{0, 1, 2} {
		want = append(want, "config "+nodeAddr(i)+" maxmemory 100mb", "config "+nodeAddr(i)+" maxmemory-policy allkeys-lru")
	}
	if !slices.Equal(f.redis.Calls, want) {
		t.Fatalf("calls %v, want %v", f.redis.Calls, want)
	}
	now, conf := f.templateAndConf()
	if now != template {
		t.Errorf("the pod template's hash changed (%s -> %s): the pods would roll", template, now)
	}
	if !strings.Contains(conf, "maxmemory-policy allkeys-lru\n") || !strings.Contains(conf, "maxmemory 100mb\n") {
		t.Errorf("redis.conf lacks the parameters:\n%s", conf)
	}
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, redisv1alpha1.ConditionRedisConfigApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s %+v", redisv1alpha1.ConditionRedisConfigApplied, c)
	}
	calls, version := len(f.redis.Calls), f.obj.ResourceVersion
	f.mustPass()
	f.mustPass()
	if len(f.redis.Calls) != calls || f.obj.ResourceVersion != version {
		t.Errorf("at rest: calls %v, resourceVersion %s -> %s", f.redis.Calls[calls:], version, f.obj.ResourceVersion)
	}
	// A node restarted on its old value is set again.
	f.redis.Nodes[nodeAddr(2)].Config["maxmemory-policy"] = "noeviction"
	f.mustPass()
	if got := f.redis.Calls[calls:]; !slices.Equal(got, []string{"config " + nodeAddr(2) + " maxmemory-policy allkeys-lru"}) {
		t.Errorf("calls %v, want r-2 set again", got)
	}
}

// A value Redis refuses is reported, naming the parameter and the node's
// answer, and not sent again while the spec asks for it.
func TestRedisLiveConfigRefusedIsReportedOnce(t *testing.T) {
	f, _ := switchoverFixture(t)
	f.redis.Nodes[nodeAddr(0)].Refuse = map[string]bool{"maxmemory-policy=most-lru": true}
	f.setRedisConfig(redisv1alpha1.RedisConfig{"maxmemory-policy": "most-lru"})
	f.mustPass()
	c := meta.FindStatusCondition(f.obj.Status.Conditions, redisv1alpha1.ConditionRedisConfigApplied)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != redisv1alpha1.ReasonParameterRefused ||
		!strings.Contains(c.Message, "spec.redisConfig.maxmemory-policy") || !strings.Contains(c.Message, "r-0") {
		t.Fatalf("%s %+v, want refused naming the parameter and r-0", redisv1alpha1.ConditionRedisConfigApplied, c)
	}
	for range 3 {
		f.mustPass()
	}
	version := f.obj.ResourceVersion
	f.mustPass()
	if got := f.redis.CallsMatching("config " + nodeAddr(0)); len(got) != 1 {
		t.Errorf("r-0 was sent %v: the refused value again", got)
	}
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, redisv1alpha1.ConditionRedisConfigApplied); f.obj.ResourceVersion != version || c.Reason != redisv1alpha1.ReasonParameterRefused {
		t.Errorf("at rest: resourceVersion %s -> %s, condition %+v", version, f.obj.ResourceVersion, c)
	}
	// A value it takes replaces it.
	f.setRedisConfig(redisv1alpha1.RedisConfig{"maxmemory-policy": "allkeys-lru"})
	for range 4 {
		f.mustPass()
	}
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, redisv1alpha1.ConditionRedisConfigApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s %+v after a value Redis takes", redisv1alpha1.ConditionRedisConfigApplied, c)
	}
}
