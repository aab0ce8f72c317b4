package redisenterprisecluster

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestConsoleEnabled(t *testing.T) {
	tests := []struct {
		name    string
		console *redisv1alpha1.Console
		want    bool
	}{
		{"on when left out", nil, true},
		{"on when enabled is left out", &redisv1alpha1.Console{}, true},
		{"on when enabled", &redisv1alpha1.Console{Enabled: ptr.To(true)}, true},
		{"off when disabled", &redisv1alpha1.Console{Enabled: ptr.To(false)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConsoleEnabled(&redisv1alpha1.RedisEnterpriseClusterSpec{Console: tt.console}); got != tt.want {
				t.Errorf("ConsoleEnabled = %v, want %v", got, tt.want)
			}
		})
	}
	c, err := Build(resources.Owner{Name: "r", Namespace: "ns"}, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3,
		Console: &redisv1alpha1.Console{Enabled: ptr.To(false)}}, Input{})
	if err != nil || c.Console != nil || len(c.Objects()) != 8 {
		t.Errorf("a cluster whose console is off: console %+v, %d objects, error %v; want no console", c.Console, len(c.Objects()), err)
	}
}

// The console's service account may read its own cluster and patch it,
// read its credentials and the TLS Secret its pod mounts, and nothing
// else; its pod runs the operator's image, restricted, with small
// resources unless spec.console.resources says otherwise.
func TestBuildConsole(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	defaults := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	tests := []struct {
		name          string
		spec          redisv1alpha1.RedisEnterpriseClusterSpec
		wantTLSSecret string
		wantResources corev1.ResourceRequirements
	}{
		{"should serve the certificate the operator issues it without spec.tls", redisv1alpha1.RedisEnterpriseClusterSpec{}, "r-ui-tls", defaults},
		{"should serve the nodes' issued certificate with tls: {}", redisv1alpha1.RedisEnterpriseClusterSpec{TLS: &redisv1alpha1.TLS{}}, "r-tls", defaults},
		{"should serve the Secret spec.tls names", redisv1alpha1.RedisEnterpriseClusterSpec{TLS: &redisv1alpha1.TLS{SecretName: "mine"}}, "mine", defaults},
		{"should take spec.console.resources", redisv1alpha1.RedisEnterpriseClusterSpec{Console: &redisv1alpha1.Console{Resources: &redisv1alpha1.NodeResources{
			Limits: map[corev1.ResourceName]redisv1alpha1.Quantity{corev1.ResourceMemory: {IntOrString: intstr.FromString("128 Mi")}}}}},
			"r-ui-tls", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := BuildConsole(owner, &tt.spec, "operator:v1")
			if err != nil {
				t.Fatal(err)
			}
			role := &rbacv1.Role{}
			convert(t, c.Role, role)
			wantRules := []rbacv1.PolicyRule{
				{APIGroups: []string{"app.redislabs.com"}, Resources: []string{"redisenterpriseclusters"}, ResourceNames: []string{"r"}, Verbs: []string{"get", "patch"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"r", tt.wantTLSSecret}, Verbs: []string{"get"}},
			}
			if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
				t.Errorf("Role rules (-want +got):\n%s", diff)
			}
			binding := &rbacv1.RoleBinding{}
			convert(t, c.RoleBinding, binding)
			wantBinding := rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "r-ui"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "r-ui", Namespace: "ns"}}}
			if diff := cmp.Diff(wantBinding.RoleRef, binding.RoleRef); diff != "" || !cmp.Equal(wantBinding.Subjects, binding.Subjects) {
				t.Errorf("RoleBinding %+v, want %+v", binding, wantBinding)
			}
			if *c.ServiceAccount.Name != "r-ui" || len(c.ServiceAccount.OwnerReferences) != 1 || !*c.ServiceAccount.OwnerReferences[0].Controller {
				t.Errorf("ServiceAccount %s owned by %+v, want r-ui controlled by the cluster", *c.ServiceAccount.Name, c.ServiceAccount.OwnerReferences)
			}

			d := c.Deployment
			if *d.Name != "r-ui" || *d.Spec.Replicas != 1 {
				t.Errorf("Deployment %s of %d replicas, want r-ui of 1", *d.Name, *d.Spec.Replicas)
			}
			if diff := cmp.Diff(d.Spec.Selector.MatchLabels, map[string]string{resources.LabelName: ConsoleKindName, resources.LabelInstance: "r"}); diff != "" {
				t.Errorf("selector (-got +want):\n%s", diff)
			}
			pod := &corev1.PodSpec{}
			convert(t, d.Spec.Template.Spec, pod)
			ctr := pod.Containers[0]
			wantArgs := []string{"--namespace=ns", "--cluster=r", "--ui-address=:8443", "--api-address=:9443", "--tls-cert-file=/tls/tls.crt", "--tls-key-file=/tls/tls.key"}
			if ctr.Image != "operator:v1" || !cmp.Equal(ctr.Command, []string{"/redis-console"}) || !cmp.Equal(ctr.Args, wantArgs) || pod.ServiceAccountName != "r-ui" {
				t.Errorf("container %s %v %v as %s, want operator:v1 /redis-console %v as r-ui", ctr.Image, ctr.Command, ctr.Args, pod.ServiceAccountName, wantArgs)
			}
			if diff := cmp.Diff(tt.wantResources, ctr.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			probe := ctr.ReadinessProbe
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || probe.HTTPGet.Path != "/healthz" || probe.HTTPGet.Port.String() != UIPortName {
				t.Errorf("readiness probe %+v, want an HTTPS GET of /healthz on %s", probe, UIPortName)
			}
			sc, psc := ctr.SecurityContext, pod.SecurityContext
			if !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
				psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || !*psc.RunAsNonRoot {
				t.Errorf("security contexts %+v, %+v, want restricted", sc, psc)
			}
			var secret string
			for _, v := range pod.Volumes {
				if v.Secret != nil {
					secret = v.Secret.SecretName
				}
			}
			if secret != tt.wantTLSSecret || !cmp.Equal(ctr.VolumeMounts[0], corev1.VolumeMount{Name: consoleTLSVolume, MountPath: "/tls", ReadOnly: true}) {
				t.Errorf("Secret %q mounted as %+v, want %s at /tls", secret, ctr.VolumeMounts, tt.wantTLSSecret)
			}
		})
	}
}

// convert turns an apply configuration into the API object of its shape.
func convert(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}
