package status

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// The status fuzz targets fill what one pass observes straight from its
// types: the resource's generation and previous status, the Deployment
// (as the status functions read it: generation, desired replicas and
// status; nil when missing), the pass's failure (nil when none) and each
// kind's other observations. A fuzz input that is the JSON of those (the
// seed corpora under testdata/fuzz) is read as such; any other fills them
// from a filler drawing from its bytes.

// WorkloadInput is what a pass of every Deployment-backed kind observes.
type WorkloadInput struct {
	Generation int64
	Deployment *appsv1.Deployment
	Failure    *conditions.Failure
}

// failureReasons are the reasons a pass fails with.
var failureReasons = []string{
	conditions.ReasonChildConflict, conditions.ReasonNodePortAllocated, conditions.ReasonApplyRejected,
	conditions.ReasonApplyFailed, conditions.ReasonInvalidSpec,
}

// decode fills in, a pointer to a target's input, from data, and gives
// the generations the shape the API server gives them: a resource's
// generation starts at 1, and its previous status describes at most that
// generation.
func decode(data []byte, in any, generation *int64, observed *int64) {
	if !fuzzspec.DecodeJSON(data, in) {
		filler(data).Fill(in)
	}
	*generation = 1 + *generation&0x7fffffff
	*observed = *observed & 0x7fffffff % (*generation + 1)
}

func filler(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.2).NumElements(1, 4).Funcs(
		fillInt32, optional[int32],
		fillInt64, optional[int64],
		fillDeployment, optional[appsv1.Deployment],
		fillDeploymentCondition,
		fillConditions,
		fillFailure, fillOptionalFailure,
		fillPod,
		fillService, optional[corev1.Service],
		fillMicroServiceDeployObserved,
	)
}

// optional fills the optional *p: nil one time in eight, else a new T.
func optional[T any](p **T, c randfill.Continue) {
	if c.Intn(8) == 0 {
		*p = nil
		return
	}
	*p = new(T)
	c.Fill(*p)
}

func pick[T any](c randfill.Continue, choices ...T) T { return choices[c.Intn(len(choices))] }

// fillInt32 fills a count or a port: mostly a small number, so that counts
// often match, and one time in eight any.
func fillInt32(n *int32, c randfill.Continue) {
	if c.Intn(8) == 0 {
		*n = int32(c.Uint32())
		return
	}
	*n = c.Int31n(5)
}

// fillInt64 fills a generation likewise.
func fillInt64(n *int64, c randfill.Continue) {
	if c.Intn(8) == 0 {
		*n = int64(c.Uint64())
		return
	}
	*n = c.Int63n(5)
}

// fillDeployment fills what the status functions read of a Deployment:
// its generation, desired replicas and status, one time in two that of a
// finished rollout (the generation observed, every pod updated and
// available), which any count may still spoil.
func fillDeployment(d *appsv1.Deployment, c randfill.Continue) {
	*d = appsv1.Deployment{}
	c.Fill(&d.Name)
	c.Fill(&d.Generation)
	c.Fill(&d.Spec.Replicas)
	c.Fill(&d.Status)
	if c.Bool() {
		return
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := &d.Status
	s.ObservedGeneration = d.Generation
	s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas = want, want, want, want, 0
	switch c.Intn(4) {
	case 0:
		s.Replicas++
	case 1:
		s.AvailableReplicas--
	}
}

// fillDeploymentCondition fills a condition of the kinds the Deployment
// controller writes, its message sometimes one of a refused pod.
func fillDeploymentCondition(dc *appsv1.DeploymentCondition, c randfill.Continue) {
	c.FillNoCustom(dc)
	dc.Type = pick(c, appsv1.DeploymentProgressing, appsv1.DeploymentAvailable, appsv1.DeploymentReplicaFailure)
	dc.Status = pick(c, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)
	dc.Reason = pick(c, "ProgressDeadlineExceeded", "NewReplicaSetAvailable", "ReplicaSetUpdated", "FailedCreate", "MinimumReplicasAvailable")
	if c.Bool() {
		dc.Message = `pods "m-` + dc.Message + `" is forbidden: exceeded quota: microservicedeploy-quota, requested: cpu=1, used: cpu=` + dc.Message + `, limited: cpu=2`
	}
}

// conditionTypes are the types of the conditions the status functions
// write, and one they do not.
var conditionTypes = []string{
	conditions.Ready, conditions.Progressing, conditions.Degraded,
	conditions.QuotaReady, conditions.Idle, conditions.Exposed, "example.com/Other",
}

// fillConditions fills a previous status's conditions as the API server
// admits them: valid, one of each type at most; none one time in four, as
// before the first pass.
func fillConditions(conds *[]metav1.Condition, c randfill.Continue) {
	*conds = nil
	if c.Intn(4) == 0 {
		return
	}
	for _, typ := range conditionTypes {
		if c.Intn(3) == 0 {
			continue
		}
		cond := metav1.Condition{
			Type:               typ,
			Status:             pick(c, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown),
			ObservedGeneration: c.Int63n(5),
			Reason:             pick(c, append(failureReasons, conditions.ReasonAvailable, conditions.ReasonRolloutInProgress)...),
		}
		c.Fill(&cond.Message)
		c.Fill(&cond.LastTransitionTime)
		*conds = append(*conds, cond)
	}
}

// fillOptionalFailure fills a pass's failure: mostly none.
func fillOptionalFailure(f **conditions.Failure, c randfill.Continue) {
	*f = nil
	if c.Intn(4) == 0 {
		*f = new(conditions.Failure)
		c.Fill(*f)
	}
}

func fillFailure(f *conditions.Failure, c randfill.Continue) {
	f.Reason = pick(c, failureReasons...)
	c.Fill(&f.Message)
}

// fillPod fills what the status functions read of a pod: its name, whether
// it is being deleted, and its phase.
func fillPod(p *corev1.Pod, c randfill.Continue) {
	*p = corev1.Pod{}
	p.Name = "m-" + string(rune('a'+c.Intn(26)))
	if c.Intn(4) == 0 {
		p.DeletionTimestamp = &fuzzNow
	}
	p.Status.Phase = pick(c, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, "")
}

// fillService fills what the status functions read of a Service: its type
// and ports.
func fillService(s *corev1.Service, c randfill.Continue) {
	*s = corev1.Service{}
	s.Spec.Type = pick(c, corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	c.Fill(&s.Spec.Ports)
}

// exposureReasons are the reasons of the builder's exposure decisions.
var exposureReasons = []string{conditions.ReasonNoBaseDomain, conditions.ReasonAuthUnavailable, conditions.ReasonIngressApplied, conditions.ReasonHostConflict}

func fillMicroServiceDeployObserved(o *MicroServiceDeployObserved, c randfill.Continue) {
	c.FillNoCustom(o)
	o.ExposureReason = pick(c, exposureReasons...)
	o.Quota = QuotaState(c.Intn(4))
}

// skipUnseen skips an input the status functions never see (a JSON input
// may hold one): previous conditions the API server refuses, or a failure
// with a reason the controllers never report.
func skipUnseen(t *testing.T, prev []metav1.Condition, failure *conditions.Failure) {
	t.Helper()
	if errs := metav1validation.ValidateConditions(prev, field.NewPath("status", "conditions")); len(errs) > 0 {
		t.Skipf("the API server refuses the previous conditions: %v", errs.ToAggregate())
	}
	if failure != nil && !slices.Contains(failureReasons, failure.Reason) {
		t.Skipf("no controller fails with reason %q", failure.Reason)
	}
}

var fuzzNow = metav1.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))

// checkConditions checks what every kind's status holds after a pass: the
// conditions want, each valid as the API server validates conditions
// (type, status, reason, message, observedGeneration, lastTransitionTime)
// and describing the current generation; observedGeneration never beyond
// the generation, moved to it by a pass without failure and kept by a
// failed one; and Ready True only when the pass succeeded and the
// Deployment is available.
func checkConditions(t *testing.T, in WorkloadInput, prevObserved int64, conds []metav1.Condition, observedGeneration int64, want ...string) {
	t.Helper()
	if errs := metav1validation.ValidateConditions(conds, field.NewPath("status", "conditions")); len(errs) > 0 {
		t.Fatalf("invalid conditions: %v", errs.ToAggregate())
	}
	for _, typ := range append([]string{conditions.Ready, conditions.Progressing, conditions.Degraded}, want...) {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			t.Fatalf("no %s condition in %v", typ, conds)
		}
		if c.ObservedGeneration != in.Generation {
			t.Fatalf("%s describes generation %d, want %d", typ, c.ObservedGeneration, in.Generation)
		}
	}
	switch {
	case observedGeneration > in.Generation:
		t.Fatalf("observedGeneration %d beyond generation %d", observedGeneration, in.Generation)
	case in.Failure == nil && observedGeneration != in.Generation:
		t.Fatalf("a pass without failure left observedGeneration at %d, want %d", observedGeneration, in.Generation)
	case in.Failure != nil && observedGeneration != prevObserved:
		t.Fatalf("a failed pass moved observedGeneration from %d to %d", prevObserved, observedGeneration)
	}
	if meta.IsStatusConditionTrue(conds, conditions.Ready) {
		if in.Failure != nil {
			t.Fatalf("Ready despite the failure %v", in.Failure)
		}
		if observeRollout(in.Deployment).phase != phaseAvailable {
			t.Fatalf("Ready though the Deployment %+v is not available", in.Deployment)
		}
	}
}

type appServiceInput struct {
	WorkloadInput
	Status appv1.AppServiceStatus
}

func FuzzAppServiceStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var in appServiceInput
		decode(data, &in, &in.Generation, &in.Status.ObservedGeneration)
		skipUnseen(t, in.Status.Conditions, in.Failure)
		st := *in.Status.DeepCopy()
		AppService(&st, in.Generation, "app=x", in.Deployment, in.Failure, fuzzNow)
		checkConditions(t, in.WorkloadInput, in.Status.ObservedGeneration, st.Conditions, st.ObservedGeneration)
		if d := in.Deployment; d != nil && (st.Replicas != d.Status.Replicas || st.ReadyReplicas != d.Status.ReadyReplicas) {
			t.Fatalf("status counts %d/%d, Deployment's %d/%d", st.ReadyReplicas, st.Replicas, d.Status.ReadyReplicas, d.Status.Replicas)
		}
		// A second pass on the same observations changes nothing: status is
		// written only when it changes.
		again := *st.DeepCopy()
		AppService(&again, in.Generation, "app=x", in.Deployment, in.Failure, metav1.NewTime(fuzzNow.Add(time.Hour)))
		if !equality.Semantic.DeepEqual(st, again) {
			t.Fatalf("a second pass changed the status:\n%+v\n%+v", st, again)
		}
	})
}

type memcachedInput struct {
	WorkloadInput
	Status cachev1alpha1.MemcachedStatus
	Pods   []*corev1.Pod
}

func FuzzMemcachedStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var in memcachedInput
		decode(data, &in, &in.Generation, &in.Status.ObservedGeneration)
		skipUnseen(t, in.Status.Conditions, in.Failure)
		// A namespace holds one pod of a name.
		seen := map[string]bool{}
		var list []*corev1.Pod
		for _, p := range in.Pods {
			if p != nil && !seen[p.Name] {
				seen[p.Name] = true
				list = append(list, p)
			}
		}
		st := *in.Status.DeepCopy()
		Memcached(&st, in.Generation, "app=x", in.Deployment, list, in.Failure, fuzzNow)
		checkConditions(t, in.WorkloadInput, in.Status.ObservedGeneration, st.Conditions, st.ObservedGeneration)
		if !slices.IsSorted(st.Nodes) {
			t.Fatalf("nodes %v not sorted", st.Nodes)
		}
		servers := 0
		for _, p := range list {
			serving := p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
			if serving {
				servers++
			}
			if serving != slices.Contains(st.Nodes, p.Name) {
				t.Fatalf("pod %s (phase %s, deleting %v): listed %v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, !serving)
			}
		}
		if len(st.Nodes) != servers {
			t.Fatalf("nodes %v, want %d", st.Nodes, servers)
		}
		slices.Reverse(list)
		again := st.DeepCopy()
		Memcached(again, in.Generation, "app=x", in.Deployment, list, in.Failure, fuzzNow)
		if !slices.Equal(st.Nodes, again.Nodes) {
			t.Fatalf("nodes depend on the order of the pods: %v, %v", st.Nodes, again.Nodes)
		}
	})
}

type myWebInput struct {
	WorkloadInput
	Status operatorv1.MyWebStatus
	// NodePort is spec.nodePortNumber.
	NodePort int32
	Service  *corev1.Service
}

func FuzzMyWebStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var in myWebInput
		decode(data, &in, &in.Generation, &in.Status.ObservedGeneration)
		skipUnseen(t, in.Status.Conditions, in.Failure)
		st := *in.Status.DeepCopy()
		MyWeb(&st, in.Generation, in.NodePort, in.Deployment, in.Service, in.Failure, fuzzNow)
		w := in.WorkloadInput
		if w.Failure == nil && !ExposesNodePort(in.Service, in.NodePort) {
			// A Service that does not expose the port is a failure of its own.
			w.Failure = &conditions.Failure{Reason: conditions.ReasonNodePortNotExposed}
			if st.ObservedGeneration != in.Status.ObservedGeneration {
				t.Fatalf("observedGeneration moved to %d though the node port is not exposed", st.ObservedGeneration)
			}
		}
		checkConditions(t, w, in.Status.ObservedGeneration, st.Conditions, st.ObservedGeneration)
		if st.Completed != meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) {
			t.Fatalf("completed %v, Ready %v", st.Completed, meta.FindStatusCondition(st.Conditions, conditions.Ready))
		}
		if st.Completed && !ExposesNodePort(in.Service, in.NodePort) {
			t.Fatalf("completed though the Service does not expose node port %d", in.NodePort)
		}
	})
}

type microServiceDeployInput struct {
	Generation int64
	Status     customv1.MicroServiceDeployStatus
	Observed   MicroServiceDeployObserved
	Failure    *conditions.Failure
}

func FuzzMicroServiceDeployStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var in microServiceDeployInput
		decode(data, &in, &in.Generation, &in.Status.ObservedGeneration)
		skipUnseen(t, in.Status.Conditions, in.Failure)
		o := in.Observed
		if !slices.Contains(exposureReasons, o.ExposureReason) {
			t.Skipf("the builder decides no exposure with reason %q", o.ExposureReason)
		}
		st := *in.Status.DeepCopy()
		MicroServiceDeploy(&st, in.Generation, o, in.Failure, fuzzNow)
		w := WorkloadInput{Generation: in.Generation, Deployment: o.Deployment, Failure: in.Failure}
		checkConditions(t, w, in.Status.ObservedGeneration, st.Conditions, st.ObservedGeneration, conditions.QuotaReady, conditions.Idle, conditions.Exposed)
		quotaReady := o.Quota == QuotaCovers
		if meta.IsStatusConditionTrue(st.Conditions, conditions.QuotaReady) != quotaReady {
			t.Fatalf("QuotaReady %v, want %v", meta.FindStatusCondition(st.Conditions, conditions.QuotaReady), quotaReady)
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) && !quotaReady {
			t.Fatal("Ready before the quota counts the instance")
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Idle) != o.Idle {
			t.Fatalf("Idle condition %v, spec.idle %v", meta.FindStatusCondition(st.Conditions, conditions.Idle), o.Idle)
		}
		if st.URL != "" && (!o.IngressApplied || st.URL != o.URL) {
			t.Fatalf("url %q shown though the Ingress is not applied", st.URL)
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Exposed) != (o.URL != "" && o.IngressApplied) {
			t.Fatalf("Exposed %v with url %q and Ingress applied %v", meta.FindStatusCondition(st.Conditions, conditions.Exposed), o.URL, o.IngressApplied)
		}
	})
}
