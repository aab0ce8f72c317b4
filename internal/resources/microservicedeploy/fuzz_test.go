package microservicedeploy

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

func optionsOf(expose uint8) Options {
	base, class, auth := fuzzspec.Exposure(expose)
	return Options{BaseDomain: base, IngressClassName: class, AuthURL: auth}
}

// FuzzBuild builds the children of MicroServiceDeploys whose specs are
// filled from the fuzz input (see fuzzspec.Decode), with the operator
// options expose selects (see fuzzspec.Exposure) and with holder, when not
// empty, holding the host: the builder never panics, the children hold the
// invariants of fuzzspec.CheckChildren, the pods carry the PriorityClass
// the quota is scoped to, the replica count is the HPA's alone while
// autoscaling, an idle instance runs no pods, an instance that needs
// authentication is never exposed without it, and one whose host another
// instance holds is not exposed. The seed corpus
// is in testdata/fuzz/FuzzBuild; the controller suite also applies it to
// the real API server with a server-side dry run.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, expose uint8, holder string) {
		m := &customv1.MicroServiceDeploy{}
		fuzzspec.Decode(data, "ns", m)
		m.UID = "uid-1"
		owner := resources.OwnerOf(m, customv1.GroupVersion.WithKind("MicroServiceDeploy"))
		opts := optionsOf(expose)
		c := Build(owner, &m.Spec, opts, resources.Defaults{}, holder)
		if err := fuzzspec.CheckChildren(owner, KindName, c.Objects()); err != nil {
			t.Fatalf("%+v: %v", m.Spec, err)
		}
		if err := fuzzspec.Same(c.Objects(), Build(owner, &m.Spec, opts, resources.Defaults{}, holder).Objects()); err != nil {
			t.Fatal(err)
		}

		if pc := c.Deployment.Spec.Template.Spec.PriorityClassName; pc == nil || *pc != PriorityClassName {
			t.Fatalf("pods of PriorityClass %v, want %s: the quota would not count them", pc, PriorityClassName)
		}
		spec := &m.Spec
		got := c.Deployment.Spec.Replicas
		switch {
		case spec.Idle:
			if got == nil || *got != 0 || c.HPA != nil || c.ReplicasHandover != nil {
				t.Fatalf("idle: replicas %v, HPA %v, handover %v; want 0 pods, no HPA, no handover", got, c.HPA != nil, c.ReplicasHandover != nil)
			}
		case spec.Autoscaling:
			if got != nil || c.HPA == nil || c.ReplicasHandover == nil || *c.ReplicasHandover.Spec.Replicas != Replicas(spec) {
				t.Fatalf("autoscaling: replicas %v, HPA %v, handover %v; want the count left to the HPA, handed over at %d", got, c.HPA != nil, c.ReplicasHandover, Replicas(spec))
			}
			if *c.HPA.Spec.MinReplicas != Replicas(spec) || *c.HPA.Spec.MaxReplicas != MaxReplicas(spec) {
				t.Fatalf("HPA between %d and %d, want %d and %d", *c.HPA.Spec.MinReplicas, *c.HPA.Spec.MaxReplicas, Replicas(spec), MaxReplicas(spec))
			}
		default:
			if got == nil || *got != Replicas(spec) || c.HPA != nil {
				t.Fatalf("replicas %v, HPA %v; want %d pods and no HPA", got, c.HPA != nil, Replicas(spec))
			}
		}
		if c.Ingress != nil {
			if spec.NeedAuth && c.Ingress.Annotations[DefaultAuthURLAnnotation] != opts.AuthURL {
				t.Fatalf("needAuth: Ingress annotations %v lack the authentication endpoint", c.Ingress.Annotations)
			}
			if !c.Exposure.Exposed() {
				t.Fatalf("an Ingress for an instance the exposure %+v does not expose", c.Exposure)
			}
		}
		if spec.NeedAuth && opts.AuthURL == "" && (c.Ingress != nil || c.Exposure.Exposed()) {
			t.Fatal("an instance that needs authentication is exposed without it")
		}
		if holder != "" && (c.Ingress != nil || c.Exposure.Exposed()) {
			t.Fatalf("exposed on a host that %s holds", holder)
		}
		if c.ConfigMap.Data[ConfigKey] != spec.Config {
			t.Fatalf("ConfigMap holds %q, want spec.config %q", c.ConfigMap.Data[ConfigKey], spec.Config)
		}
	})
}

// FuzzQuota builds the namespace's ResourceQuota for two instances whose
// specs are filled from the fuzz inputs a and b (see fuzzspec.Decode): it
// never panics, it is scoped to the instances' PriorityClass and has no
// owner references, every amount is non-negative, the quota of both is the
// sum of each one's, and it leaves room for each of them.
func FuzzQuota(f *testing.F) {
	f.Fuzz(func(t *testing.T, dataA, dataB []byte) {
		a, b := &customv1.MicroServiceDeploy{}, &customv1.MicroServiceDeploy{}
		fuzzspec.Decode(dataA, "ns", a)
		fuzzspec.Decode(dataB, "ns", b)
		specs := []*customv1.MicroServiceDeploySpec{&a.Spec, &b.Spec}
		for _, spec := range specs {
			if why := refused(spec); why != "" {
				t.Skipf("the API server refuses %s: the quota never counts such an instance", why)
			}
		}

		q := Quota("ns", specs, nil)
		if *q.Name != QuotaName || *q.Namespace != "ns" || q.Labels[resources.LabelManagedBy] != resources.ManagedBy {
			t.Fatalf("quota %s/%s with labels %v is not the operator's", *q.Namespace, *q.Name, q.Labels)
		}
		if len(q.OwnerReferences) != 0 {
			t.Fatalf("%d owner references, want none", len(q.OwnerReferences))
		}
		scope := q.Spec.ScopeSelector
		if scope == nil || len(scope.MatchExpressions) != 1 || *scope.MatchExpressions[0].ScopeName != corev1.ResourceQuotaScopePriorityClass ||
			len(scope.MatchExpressions[0].Values) != 1 || scope.MatchExpressions[0].Values[0] != PriorityClassName {
			t.Fatalf("scope %+v, want the pods of PriorityClass %s", scope, PriorityClassName)
		}
		both := QuotaHard(specs)
		onlyA, onlyB := QuotaHard(specs[:1]), QuotaHard(specs[1:])
		for name, amount := range both {
			if amount.Sign() < 0 {
				t.Fatalf("%s: %s is negative", name, amount.String())
			}
			sum := resource.Quantity{}
			sum.Add(onlyA[name])
			sum.Add(onlyB[name])
			if amount.Cmp(sum) != 0 {
				t.Fatalf("%s: %s for both, %s + %s for each", name, amount.String(), quantityOf(onlyA, name), quantityOf(onlyB, name))
			}
			if _, ok := onlyA[name]; !ok {
				t.Fatalf("%s is in the quota of both though instance a does not declare it", name)
			}
		}
		for _, spec := range specs {
			if !Covers(both, spec) {
				t.Fatalf("the quota %v leaves no room for an instance it counts: %+v", both, spec.ResourceRequirements)
			}
		}
		if !equalLists(q.Spec.Hard, &both) {
			t.Fatalf("quota hard %v, want %v", q.Spec.Hard, both)
		}
	})
}

// refused names what in spec the schema refuses among the fields the quota
// reads (see the markers of MicroServiceDeploySpec), or returns "".
func refused(spec *customv1.MicroServiceDeploySpec) string {
	if r := spec.Replicas; r != nil && (*r < 0 || *r > 1000) {
		return fmt.Sprintf("replicas %d", *r)
	}
	if r := spec.AutoscalingMaxReplicas; r != nil && (*r < 1 || *r > 1000) {
		return fmt.Sprintf("autoscalingMaxReplicas %d", *r)
	}
	rr := spec.ResourceRequirements
	for _, l := range []corev1.ResourceList{rr.Requests, rr.Limits} {
		for name, q := range l {
			if q.Sign() < 0 {
				return fmt.Sprintf("a negative %s", name)
			}
		}
	}
	return ""
}

func quantityOf(l corev1.ResourceList, name corev1.ResourceName) string {
	q := l[name]
	return q.String()
}

func equalLists(a *corev1.ResourceList, b *corev1.ResourceList) bool {
	if a == nil || b == nil {
		return a == b || (a == nil && len(*b) == 0) || (b == nil && len(*a) == 0)
	}
	if len(*a) != len(*b) {
		return false
	}
	for k, v := range *a {
		w, ok := (*b)[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
