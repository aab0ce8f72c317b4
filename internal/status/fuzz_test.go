package status

import (
	"fmt"
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
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

// The status fuzz targets share their first arguments: the resource's
// generation and the observedGeneration of its previous status, the
// Deployment (missing, or its generation, observed generation, desired
// and reported counts, and whether its rollout stalled or cannot create
// pods) and the pass's failure (none, or one of the reasons the
// controllers report, with a message).

// failureReasons are the reasons a pass fails with.
var failureReasons = []string{
	conditions.ReasonChildConflict, conditions.ReasonNodePortAllocated, conditions.ReasonApplyRejected,
	conditions.ReasonApplyFailed, conditions.ReasonInvalidSpec,
}

type workloadInput struct {
	generation, prevObserved int64
	deployment               *appsv1.Deployment
	failure                  *Failure
}

func newWorkloadInput(generation, prevObserved int64, exists bool, dGeneration, dObserved int64, want, replicas, updated, ready, available int32,
	stalled, replicaFailure bool, failure uint8, message string) workloadInput {
	// The API server starts generations at 1, and the previous status
	// describes at most the current one.
	in := workloadInput{generation: 1 + generation&0x7fffffff}
	in.prevObserved = prevObserved & 0x7fffffff % (in.generation + 1)
	if exists {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: dGeneration},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(want)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: dObserved, Replicas: replicas, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: available, UnavailableReplicas: max(0, replicas-available)},
		}
		if stalled {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"})
		}
		if replicaFailure {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Message: message})
		}
		in.deployment = d
	}
	if failure != 0 {
		in.failure = &Failure{Reason: failureReasons[int(failure)%len(failureReasons)], Message: message}
	}
	return in
}

var fuzzNow = metav1.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))

// checkConditions checks what every kind's status holds after a pass: the
// conditions want, each valid as the API server validates conditions
// (type, status, reason, message, observedGeneration, lastTransitionTime)
// and describing the current generation; observedGeneration never beyond
// the generation, moved to it by a pass without failure and kept by a
// failed one; and Ready True only when the pass succeeded and the
// Deployment is available.
func checkConditions(t *testing.T, in workloadInput, conds []metav1.Condition, observedGeneration int64, want ...string) {
	t.Helper()
	if errs := metav1validation.ValidateConditions(conds, field.NewPath("status", "conditions")); len(errs) > 0 {
		t.Fatalf("invalid conditions: %v", errs.ToAggregate())
	}
	for _, typ := range append([]string{conditions.Ready, conditions.Progressing, conditions.Degraded}, want...) {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			t.Fatalf("no %s condition in %v", typ, conds)
		}
		if c.ObservedGeneration != in.generation {
			t.Fatalf("%s describes generation %d, want %d", typ, c.ObservedGeneration, in.generation)
		}
	}
	switch {
	case observedGeneration > in.generation:
		t.Fatalf("observedGeneration %d beyond generation %d", observedGeneration, in.generation)
	case in.failure == nil && observedGeneration != in.generation:
		t.Fatalf("a pass without failure left observedGeneration at %d, want %d", observedGeneration, in.generation)
	case in.failure != nil && observedGeneration != in.prevObserved:
		t.Fatalf("a failed pass moved observedGeneration from %d to %d", in.prevObserved, observedGeneration)
	}
	if meta.IsStatusConditionTrue(conds, conditions.Ready) {
		if in.failure != nil {
			t.Fatalf("Ready despite the failure %v", in.failure)
		}
		if observeRollout(in.deployment).phase != phaseAvailable {
			t.Fatalf("Ready though the Deployment %+v is not available", in.deployment)
		}
	}
}

func FuzzAppServiceStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, generation, prevObserved int64, exists bool, dGeneration, dObserved int64, want, replicas, updated, ready, available int32,
		stalled, replicaFailure bool, failure uint8, message string) {
		in := newWorkloadInput(generation, prevObserved, exists, dGeneration, dObserved, want, replicas, updated, ready, available, stalled, replicaFailure, failure, message)
		st := appv1.AppServiceStatus{ObservedGeneration: in.prevObserved}
		AppService(&st, in.generation, "app=x", in.deployment, in.failure, fuzzNow)
		checkConditions(t, in, st.Conditions, st.ObservedGeneration)
		if in.deployment != nil && (st.Replicas != in.deployment.Status.Replicas || st.ReadyReplicas != in.deployment.Status.ReadyReplicas) {
			t.Fatalf("status counts %d/%d, Deployment's %d/%d", st.ReadyReplicas, st.Replicas, in.deployment.Status.ReadyReplicas, in.deployment.Status.Replicas)
		}
		// A second pass on the same observations changes nothing: status is
		// written only when it changes.
		again := *st.DeepCopy()
		AppService(&again, in.generation, "app=x", in.deployment, in.failure, metav1.NewTime(fuzzNow.Add(time.Hour)))
		if !equalStatus(st, again) {
			t.Fatalf("a second pass changed the status:\n%+v\n%+v", st, again)
		}
	})
}

func FuzzMemcachedStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, generation, prevObserved int64, exists bool, dGeneration, dObserved int64, want, replicas, updated, ready, available int32,
		stalled, replicaFailure bool, failure uint8, message string, pods uint8, phases uint32, deleting uint16) {
		in := newWorkloadInput(generation, prevObserved, exists, dGeneration, dObserved, want, replicas, updated, ready, available, stalled, replicaFailure, failure, message)
		phaseOf := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}
		var list []*corev1.Pod
		for i := range int(pods % 16) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m-%x", (i*7919)%101)}}
			p.Status.Phase = phaseOf[(phases>>(2*i))&3]
			if deleting&(1<<i) != 0 {
				p.DeletionTimestamp = &fuzzNow
			}
			list = append(list, p)
		}
		st := cachev1alpha1.MemcachedStatus{ObservedGeneration: in.prevObserved}
		Memcached(&st, in.generation, "app=x", in.deployment, list, in.failure, fuzzNow)
		checkConditions(t, in, st.Conditions, st.ObservedGeneration)
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
		Memcached(again, in.generation, "app=x", in.deployment, list, in.failure, fuzzNow)
		if !slices.Equal(st.Nodes, again.Nodes) {
			t.Fatalf("nodes depend on the order of the pods: %v, %v", st.Nodes, again.Nodes)
		}
	})
}

func FuzzMyWebStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, generation, prevObserved int64, exists bool, dGeneration, dObserved int64, want, replicas, updated, ready, available int32,
		stalled, replicaFailure bool, failure uint8, message string, nodePort int32, service bool, serviceType uint8, serviceNodePort int32) {
		in := newWorkloadInput(generation, prevObserved, exists, dGeneration, dObserved, want, replicas, updated, ready, available, stalled, replicaFailure, failure, message)
		var svc *corev1.Service
		if service {
			svc = &corev1.Service{Spec: corev1.ServiceSpec{
				Type:  []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}[serviceType%3],
				Ports: []corev1.ServicePort{{Port: 80, NodePort: serviceNodePort}},
			}}
		}
		st := operatorv1.MyWebStatus{ObservedGeneration: in.prevObserved}
		MyWeb(&st, in.generation, nodePort, in.deployment, svc, in.failure, fuzzNow)
		if in.failure == nil && !ExposesNodePort(svc, nodePort) {
			// A Service that does not expose the port is a failure of its own.
			in.failure = &Failure{Reason: conditions.ReasonNodePortNotExposed}
			if st.ObservedGeneration != in.prevObserved {
				t.Fatalf("observedGeneration moved to %d though the node port is not exposed", st.ObservedGeneration)
			}
		}
		checkConditions(t, in, st.Conditions, st.ObservedGeneration)
		if st.Completed != meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) {
			t.Fatalf("completed %v, Ready %v", st.Completed, meta.FindStatusCondition(st.Conditions, conditions.Ready))
		}
		if st.Completed && !ExposesNodePort(svc, nodePort) {
			t.Fatalf("completed though the Service does not expose node port %d", nodePort)
		}
	})
}

func FuzzMicroServiceDeployStatus(f *testing.F) {
	f.Fuzz(func(t *testing.T, generation, prevObserved int64, exists bool, dGeneration, dObserved int64, want, replicas, updated, ready, available int32,
		stalled, replicaFailure bool, failure uint8, message string, idle bool, url string, ingressApplied bool, exposure uint8,
		quota uint8) {
		in := newWorkloadInput(generation, prevObserved, exists, dGeneration, dObserved, want, replicas, updated, ready, available, stalled, replicaFailure, failure, message)
		o := MicroServiceDeployObserved{
			Deployment: in.deployment, Idle: idle, URL: url, IngressApplied: ingressApplied,
			ExposureReason:  []string{conditions.ReasonNoBaseDomain, conditions.ReasonAuthUnavailable, conditions.ReasonIngressApplied, conditions.ReasonHostConflict}[exposure%4],
			ExposureMessage: "exposure",
			Quota:           QuotaState(quota % 4),
			QuotaName:       "microservicedeploy-quota",
		}
		st := customv1.MicroServiceDeployStatus{ObservedGeneration: in.prevObserved}
		MicroServiceDeploy(&st, in.generation, o, in.failure, fuzzNow)
		checkConditions(t, in, st.Conditions, st.ObservedGeneration, conditions.QuotaReady, conditions.Idle, conditions.Exposed)
		quotaReady := o.Quota == QuotaCovers
		if meta.IsStatusConditionTrue(st.Conditions, conditions.QuotaReady) != quotaReady {
			t.Fatalf("QuotaReady %v, want %v", meta.FindStatusCondition(st.Conditions, conditions.QuotaReady), quotaReady)
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) && !quotaReady {
			t.Fatal("Ready before the quota counts the instance")
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Idle) != idle {
			t.Fatalf("Idle condition %v, spec.idle %v", meta.FindStatusCondition(st.Conditions, conditions.Idle), idle)
		}
		if st.URL != "" && (!ingressApplied || st.URL != url) {
			t.Fatalf("url %q shown though the Ingress is not applied", st.URL)
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Exposed) != (url != "" && ingressApplied) {
			t.Fatalf("Exposed %v with url %q and Ingress applied %v", meta.FindStatusCondition(st.Conditions, conditions.Exposed), url, ingressApplied)
		}
	})
}

// equalStatus compares two AppService statuses.
func equalStatus(a, b appv1.AppServiceStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}
