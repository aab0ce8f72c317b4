package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestMicroServiceDeployAdmission checks that the CRD schema and CEL rules
// reject bad input with a message naming the field, and accept good input.
func TestMicroServiceDeployAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	q := resource.MustParse
	tests := []struct {
		name   string
		mutate func(*customv1.MicroServiceDeploy)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"should accept the sample", func(*customv1.MicroServiceDeploy) {}, ""},
		{"should accept the sample without its optional fields", func(m *customv1.MicroServiceDeploy) {
			m.Spec = customv1.MicroServiceDeploySpec{MsName: "ms", FullName: m.Name, Version: "1", Path: "v1", Image: "nginx"}
		}, ""},
		{"should reject a missing msName", func(m *customv1.MicroServiceDeploy) { m.Spec.MsName = "" }, "spec.msName"},
		{"should reject an msName that is no DNS label", func(m *customv1.MicroServiceDeploy) { m.Spec.MsName = "Ms_Sample" }, "spec.msName"},
		{"should reject a fullName other than metadata.name", func(m *customv1.MicroServiceDeploy) { m.Spec.FullName = "other" },
			"spec.fullName must equal metadata.name"},
		{"should reject a missing version", func(m *customv1.MicroServiceDeploy) { m.Spec.Version = "" }, "spec.version"},
		{"should reject a version that is no label value", func(m *customv1.MicroServiceDeploy) { m.Spec.Version = "1.0 beta" }, "spec.version"},
		{"should reject a path that cannot be in a host name", func(m *customv1.MicroServiceDeploy) { m.Spec.Path = "v1/api" }, "spec.path"},
		{"should reject an msName and path too long for one DNS label", func(m *customv1.MicroServiceDeploy) {
			m.Spec.MsName = strings.Repeat("a", 40)
			m.Spec.Path = strings.Repeat("b", 23)
		}, "spec.msName and spec.path together may have at most 62 characters"},
		{"should reject an empty image", func(m *customv1.MicroServiceDeploy) { m.Spec.Image = "" }, "spec.image"},
		{"should reject an image with surrounding blanks", func(m *customv1.MicroServiceDeploy) { m.Spec.Image = " nginx" }, "spec.image"},
		{"should reject negative replicas", func(m *customv1.MicroServiceDeploy) { m.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas"},
		{"should reject zero replicas with autoscaling", func(m *customv1.MicroServiceDeploy) { m.Spec.Replicas = ptr.To[int32](0) },
			"spec.replicas must be at least 1 when spec.autoscaling is true"},
		{"should accept zero replicas without autoscaling", func(m *customv1.MicroServiceDeploy) {
			m.Spec.Replicas, m.Spec.Autoscaling = ptr.To[int32](0), false
		}, ""},
		{"should reject a maximum below replicas", func(m *customv1.MicroServiceDeploy) { m.Spec.AutoscalingMaxReplicas = ptr.To[int32](2) },
			"spec.autoscalingMaxReplicas must be at least spec.replicas"},
		{"should reject a target CPU utilization of 0", func(m *customv1.MicroServiceDeploy) {
			m.Spec.AutoscalingTargetCPUUtilization = ptr.To[int32](0)
		}, "spec.autoscalingTargetCPUUtilization"},
		{"should reject autoscaling without a CPU request", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ResourceRequirements = customv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}
		}, "spec.resourceRequirements.requests.cpu is required when spec.autoscaling is true"},
		{"should accept autoscaling on a CPU limit alone", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ResourceRequirements = customv1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("1")}}
		}, ""},
		{"should reject a request above its limit", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ResourceRequirements.Requests[corev1.ResourceMemory] = q("8Gi")
		}, "spec.resourceRequirements.requests must not exceed spec.resourceRequirements.limits"},
		{"should reject a resource the quota cannot count", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ResourceRequirements.Limits["nvidia.com/gpu"] = q("1")
		}, "spec.resourceRequirements.limits may only name cpu, memory and ephemeral-storage"},
		{"should reject a negative request", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ResourceRequirements.Requests[corev1.ResourceCPU] = q("-1")
		}, "spec.resourceRequirements.requests must not be negative"},
		{"should reject a creationTimestamp that is not milliseconds", func(m *customv1.MicroServiceDeploy) {
			m.Spec.CreationTimestamp = "2018-08-29T12:45:18Z"
		}, "spec.creationTimestamp"},
		{"should reject a configSecretName that cannot name a Secret", func(m *customv1.MicroServiceDeploy) {
			m.Spec.ConfigSecretName = "Not_A_Name"
		}, "spec.configSecretName"},
		{"should reject port 0", func(m *customv1.MicroServiceDeploy) { m.Spec.Port = ptr.To[int32](0) }, "spec.port"},
		{"should reject a config too large for a ConfigMap", func(m *customv1.MicroServiceDeploy) {
			m.Spec.Config = strings.Repeat("x", 262001)
		}, "spec.config"},
		{"should reject a name that cannot name a Service", func(m *customv1.MicroServiceDeploy) {
			m.Name, m.Spec.FullName = "1ms", "1ms"
		}, "metadata.name must be a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &customv1.MicroServiceDeploy{}
			testenv.LoadSample(t, testenv.MSDSample, m, ns)
			tt.mutate(m)
			testenv.ExpectAdmission(t, k8s.Create(context.Background(), m, client.DryRunAll), tt.wantErr)
		})
	}
}

// TestMicroServiceDeployNamesAreImmutable checks the transition rules.
func TestMicroServiceDeployNamesAreImmutable(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	m := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, testenv.MSDSample, m, ns)
	testenv.Create(t, k8s, m)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), m) })
	for _, tt := range []struct {
		mutate  func(*customv1.MicroServiceDeploy)
		wantErr string
	}{
		{func(m *customv1.MicroServiceDeploy) { m.Spec.MsName = "other" }, "spec.msName is immutable"},
		{func(m *customv1.MicroServiceDeploy) { m.Spec.FullName = "other" }, "spec.fullName is immutable"},
	} {
		changed := m.DeepCopy()
		tt.mutate(changed)
		err := k8s.Update(context.Background(), changed, client.DryRunAll)
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("update: %v, want an error naming %q", err, tt.wantErr)
		}
	}
	// Other fields may change.
	changed := m.DeepCopy()
	changed.Spec.Version, changed.Spec.Idle = "1.1", true
	if err := k8s.Update(context.Background(), changed, client.DryRunAll); err != nil {
		t.Errorf("update of version and idle rejected: %v", err)
	}
}
