package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/appservice"
	"github.com/app-operator/app-operator/test/testenv"
)

// What keeps an AppService's pods from running reaches its status as soon
// as the kubelet reports it, not at the Deployment's progress deadline: a
// pod whose image cannot be pulled makes the AppService Degraded, naming
// the image. The kubelet's retries, which keep the failure as it is, write
// no status; the pod running again clears it.
func TestAppServiceReportsPodsThatCannotRun(t *testing.T) {
	ctx := context.Background()
	ns, op := startOperator(t)
	ensureServiceAccount(t, ns)
	app := createAvailableAppService(t, ns)

	owner := resources.OwnerOf(app, appv1.GroupVersion.WithKind("AppService"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name + "-pod", Labels: resources.Labels(appservice.Selector(owner))},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "web", Image: "registry.invalid/nginx:404"}},
		},
	}
	testenv.Create(t, k8s, pod)
	setWaiting := func(reason string, restarts int32) {
		t.Helper()
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "web", Image: "registry.invalid/nginx:404", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "pull " + reason}},
		}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	op.Mutations.Reset()
	setWaiting("ErrImagePull", 0)
	c := waitForCondition(t, app, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonImagePullFailed)
	if !strings.Contains(c.Message, `"registry.invalid/nginx:404"`) {
		t.Errorf("Degraded message %q does not name the image", c.Message)
	}
	if r := readyOf(t, app); r.Status != metav1.ConditionFalse || r.Reason != conditions.ReasonImagePullFailed {
		t.Errorf("Ready = %s (%s) while the image cannot be pulled, want False (%s)", r.Status, r.Reason, conditions.ReasonImagePullFailed)
	}

	// The kubelet retrying: the same failure, no status write.
	for i, reason := range []string{"ImagePullBackOff", "ErrImagePull", "ImagePullBackOff"} {
		setWaiting(reason, int32(i))
	}
	op.Mutations.WaitQuiet(t, ns, time.Second, 20*time.Second)
	if status, _, _ := writesTo(op.Mutations.In(ns), app.Name); len(status) != 1 {
		t.Errorf("a failing pod and three retries of its pull cost %d status writes, want 1:\n%s", len(status), strings.Join(op.Mutations.In(ns), "\n"))
	}

	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "web", Image: "registry.invalid/nginx:404", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
}

// A container that runs but never passes its readiness probe makes the
// AppService Degraded once the probe's own time is up (initial delay,
// failure threshold times period, timeout), with no pod update to wake the
// pass then: the kubelet writes nothing while a probe keeps failing. The
// container becoming ready clears it.
func TestAppServiceReportsAContainerThatNeverBecomesReady(t *testing.T) {
	ctx := context.Background()
	ns, _ := startOperator(t)
	ensureServiceAccount(t, ns)
	app := createAvailableAppService(t, ns)

	owner := resources.OwnerOf(app, appv1.GroupVersion.WithKind("AppService"))
	probe := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 2, TimeoutSeconds: 1,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name + "-pod", Labels: resources.Labels(appservice.Selector(owner))},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "web", Image: "nginx", ReadinessProbe: probe}},
		},
	}
	testenv.Create(t, k8s, pod)
	// As the API server keeps it: to the second.
	started := metav1.Now().Rfc3339Copy().Time
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "web", Image: "nginx", Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
	}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	c := waitForCondition(t, app, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonReadinessProbeFailed)
	if took := time.Since(started); took < 3*time.Second {
		t.Errorf("Degraded %.1f s after the container started, before its probe's 3 s were up", took.Seconds())
	}
	for _, want := range []string{"Pod " + pod.Name, "container web", "HTTP GET /healthz on port 8080"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Degraded message %q does not say %q", c.Message, want)
		}
	}

	pod.Status.ContainerStatuses[0].Ready = true
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
}
