package microservicedeploy

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current builders")

func owner(name string) resources.Owner {
	return resources.Owner{GVK: customv1.GroupVersion.WithKind("MicroServiceDeploy"), Name: name, Namespace: "ns", UID: "uid-" + name}
}

// sample is the spec of the seed's sample, as config/samples has it.
func sample() customv1.MicroServiceDeploySpec {
	return customv1.MicroServiceDeploySpec{
		MsName: "ms-sample", FullName: "ms-sample-v1s0", Version: "1.0", Path: "v1",
		Image: "just a image url", Replicas: ptr.To[int32](3), Autoscaling: true, NeedAuth: true,
		Config: "password=88888888", CreationTimestamp: "1535546718115",
		ResourceRequirements: customv1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		},
	}
}

func with(mutate func(*customv1.MicroServiceDeploySpec)) customv1.MicroServiceDeploySpec {
	s := sample()
	mutate(&s)
	return s
}

var exposing = Options{BaseDomain: "apps.example.com", IngressClassName: "nginx", AuthURL: "https://auth.example.com/check"}

func TestBuildReplicasAndHPA(t *testing.T) {
	type shape struct {
		// Replicas of the Deployment; nil when it leaves the field to the HPA.
		Replicas *int32
		// Handover is the replica count handed to the HPA; nil when none.
		Handover *int32
		HPA      bool
		Min, Max int32
	}
	tests := []struct {
		name string
		spec customv1.MicroServiceDeploySpec
		want shape
	}{
		{"should set replicas and run no HPA without autoscaling",
			with(func(s *customv1.MicroServiceDeploySpec) { s.Autoscaling = false }),
			shape{Replicas: ptr.To[int32](3)}},
		{"should leave replicas to an HPA from replicas to twice replicas with autoscaling",
			sample(),
			shape{Handover: ptr.To[int32](3), HPA: true, Min: 3, Max: 6}},
		{"should use the maximum the spec gives",
			with(func(s *customv1.MicroServiceDeploySpec) { s.AutoscalingMaxReplicas = ptr.To[int32](10) }),
			shape{Handover: ptr.To[int32](3), HPA: true, Min: 3, Max: 10}},
		{"should park an idle instance at zero replicas without an HPA",
			with(func(s *customv1.MicroServiceDeploySpec) { s.Idle = true }),
			shape{Replicas: ptr.To[int32](0)}},
		{"should park an idle instance without autoscaling at zero replicas",
			with(func(s *customv1.MicroServiceDeploySpec) { s.Idle, s.Autoscaling = true, false }),
			shape{Replicas: ptr.To[int32](0)}},
		{"should default replicas to 1",
			with(func(s *customv1.MicroServiceDeploySpec) { s.Replicas, s.Autoscaling = nil, false }),
			shape{Replicas: ptr.To[int32](1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(owner("ms-sample-v1s0"), &tt.spec, Options{}, resources.Defaults{}, "")
			got := shape{Replicas: c.Deployment.Spec.Replicas, HPA: c.HPA != nil}
			if c.ReplicasHandover != nil {
				got.Handover = c.ReplicasHandover.Spec.Replicas
			}
			if c.HPA != nil {
				got.Min, got.Max = *c.HPA.Spec.MinReplicas, *c.HPA.Spec.MaxReplicas
				if *c.HPA.Spec.ScaleTargetRef.Name != "ms-sample-v1s0" || *c.HPA.Spec.ScaleTargetRef.Kind != "Deployment" {
					t.Errorf("HPA scales %+v", c.HPA.Spec.ScaleTargetRef)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("shape (-want +got):\n%s", diff)
			}
			if len(c.Handovers()) != btoi(tt.want.Handover != nil) {
				t.Errorf("Handovers() = %d objects", len(c.Handovers()))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBuildPodsRunUnderTheirServiceAccountWithTheirConfig(t *testing.T) {
	spec := with(func(s *customv1.MicroServiceDeploySpec) { s.ConfigSecretName = "ms-sample-credentials" })
	c := Build(owner("ms-sample-v1s0"), &spec, Options{}, resources.Defaults{}, "")
	pod := c.Deployment.Spec.Template
	if *pod.Spec.ServiceAccountName != *c.ServiceAccount.Name {
		t.Errorf("pods run as %s, want the instance's ServiceAccount %s", *pod.Spec.ServiceAccountName, *c.ServiceAccount.Name)
	}
	if got := c.ConfigMap.Data[ConfigKey]; got != "password=88888888" {
		t.Errorf("ConfigMap data = %q", got)
	}
	mounts := make([]string, 0, len(pod.Spec.Containers[0].VolumeMounts))
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, *m.Name+":"+*m.MountPath+":"+ptr.Deref(m.SubPath, ""))
	}
	if diff := cmp.Diff([]string{"config:" + ConfigFile + ":" + ConfigKey, "secret:" + SecretDir + ":"}, mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if got := *pod.Spec.Volumes[1].Secret.SecretName; got != "ms-sample-credentials" {
		t.Errorf("secret volume = %s", got)
	}
	if pod.Labels[resources.LabelVersion] != "1.0" || c.Deployment.Labels[resources.LabelVersion] != "1.0" {
		t.Errorf("version label: pods %v, Deployment %v", pod.Labels, c.Deployment.Labels)
	}
	if diff := cmp.Diff(Selector("ms-sample-v1s0"), c.Deployment.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if _, ok := c.Deployment.Spec.Selector.MatchLabels[resources.LabelVersion]; ok {
		t.Error("the version entered the selector, which is immutable")
	}
}

func TestConfigChangeChangesThePodTemplate(t *testing.T) {
	hash := func(config string) string {
		spec := with(func(s *customv1.MicroServiceDeploySpec) { s.Config = config })
		return Build(owner("a"), &spec, Options{}, resources.Defaults{}, "").Deployment.Spec.Template.Annotations[ConfigHashAnnotation]
	}
	if hash("password=1") == hash("password=2") {
		t.Error("two configurations give the same pod template: a change would not roll the pods")
	}
	if hash("password=1") != hash("password=1") || hash("") == "" { //nolint:staticcheck // Two calls on purpose: the hash must not change from one to the next.
		t.Error("the hash is not a stable function of the configuration")
	}
}

func TestExpose(t *testing.T) {
	tests := []struct {
		name       string
		spec       customv1.MicroServiceDeploySpec
		opts       Options
		wantReason string
		wantHost   string
		// wantAuth is the auth annotation on the Ingress; "" for none.
		wantAuth string
	}{
		{"should expose nothing without a base domain", sample(), Options{AuthURL: "https://auth"},
			conditions.ReasonNoBaseDomain, "", ""},
		{"should not expose an instance needing auth when there is no auth endpoint", sample(), Options{BaseDomain: "apps.example.com"},
			conditions.ReasonAuthUnavailable, "", ""},
		{"should expose an instance needing auth behind the auth endpoint", sample(), exposing,
			conditions.ReasonIngressApplied, "ms-sample-v1.apps.example.com", "https://auth.example.com/check"},
		{"should expose an instance not needing auth without it",
			with(func(s *customv1.MicroServiceDeploySpec) { s.NeedAuth = false }), Options{BaseDomain: "apps.example.com"},
			conditions.ReasonIngressApplied, "ms-sample-v1.apps.example.com", ""},
		{"should put the auth endpoint in the annotation the options name", sample(),
			Options{BaseDomain: "apps.example.com", AuthURL: "https://auth", AuthURLAnnotation: "example.com/auth-url"},
			conditions.ReasonIngressApplied, "ms-sample-v1.apps.example.com", "https://auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(owner("ms-sample-v1s0"), &tt.spec, tt.opts, resources.Defaults{}, "")
			if c.Exposure.Reason != tt.wantReason || c.Exposure.Host != tt.wantHost {
				t.Fatalf("exposure = %+v, want reason %s host %q", c.Exposure, tt.wantReason, tt.wantHost)
			}
			if tt.wantHost == "" {
				if c.Ingress != nil {
					t.Fatal("an Ingress was built for an instance that must not be exposed")
				}
				return
			}
			if c.Exposure.URL != "http://"+tt.wantHost+"/" {
				t.Errorf("URL = %s", c.Exposure.URL)
			}
			rule := c.Ingress.Spec.Rules[0]
			if *rule.Host != tt.wantHost || *rule.HTTP.Paths[0].Backend.Service.Name != "ms-sample-v1s0" {
				t.Errorf("rule = host %s backend %s", *rule.Host, *rule.HTTP.Paths[0].Backend.Service.Name)
			}
			var auth string
			for k, v := range c.Ingress.Annotations {
				if strings.HasSuffix(k, "auth-url") {
					auth = v
				}
			}
			if auth != tt.wantAuth {
				t.Errorf("auth annotation = %q, want %q (annotations %v)", auth, tt.wantAuth, c.Ingress.Annotations)
			}
		})
	}
}

func TestSurge(t *testing.T) {
	for n, want := range map[int32]int32{0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 6: 2, 8: 2, 9: 3, 100: 25} {
		if got := Surge(n); got != want {
			t.Errorf("Surge(%d) = %d, want %d (25%%, rounded up, as the Deployment controller does)", n, got, want)
		}
	}
}

func TestQuotaHard(t *testing.T) {
	q := resource.MustParse
	noLimits := with(func(s *customv1.MicroServiceDeploySpec) {
		s.ResourceRequirements.Limits = nil
	})
	limitsOnly := with(func(s *customv1.MicroServiceDeploySpec) {
		s.ResourceRequirements.Requests = nil
	})
	tests := []struct {
		name      string
		instances []customv1.MicroServiceDeploySpec
		want      corev1.ResourceList
	}{
		{"should size the sample for 6 pods at most, 2 of surge and 6 terminating", []customv1.MicroServiceDeploySpec{sample()},
			corev1.ResourceList{"requests.cpu": q("28"), "limits.cpu": q("28"), "requests.memory": q("56Gi"), "limits.memory": q("56Gi")}},
		{"should size an instance without autoscaling for replicas, surge and replicas terminating",
			[]customv1.MicroServiceDeploySpec{with(func(s *customv1.MicroServiceDeploySpec) { s.Autoscaling = false })},
			corev1.ResourceList{"requests.cpu": q("14"), "limits.cpu": q("14"), "requests.memory": q("28Gi"), "limits.memory": q("28Gi")}},
		{"should sum two instances", []customv1.MicroServiceDeploySpec{sample(), with(func(s *customv1.MicroServiceDeploySpec) {
			s.Autoscaling = false
			s.Replicas = ptr.To[int32](1)
			s.ResourceRequirements.Requests = corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("1Gi")}
		})},
			corev1.ResourceList{"requests.cpu": q("29500m"), "limits.cpu": q("34"), "requests.memory": q("59Gi"), "limits.memory": q("68Gi")}},
		{"should count an idle instance as no pods", []customv1.MicroServiceDeploySpec{sample(), with(func(s *customv1.MicroServiceDeploySpec) { s.Idle = true })},
			corev1.ResourceList{"requests.cpu": q("28"), "limits.cpu": q("28"), "requests.memory": q("56Gi"), "limits.memory": q("56Gi")}},
		{"should be zero when every instance is idle", []customv1.MicroServiceDeploySpec{with(func(s *customv1.MicroServiceDeploySpec) { s.Idle = true })},
			corev1.ResourceList{"requests.cpu": q("0"), "limits.cpu": q("0"), "requests.memory": q("0"), "limits.memory": q("0")}},
		{"should leave out limits when an instance sets none", []customv1.MicroServiceDeploySpec{sample(), noLimits},
			corev1.ResourceList{"requests.cpu": q("56"), "requests.memory": q("112Gi")}},
		{"should count a limit as the request when the request is unset", []customv1.MicroServiceDeploySpec{limitsOnly},
			corev1.ResourceList{"requests.cpu": q("28"), "limits.cpu": q("28"), "requests.memory": q("56Gi"), "limits.memory": q("56Gi")}},
		{"should leave out a resource one instance does not declare", []customv1.MicroServiceDeploySpec{sample(), with(func(s *customv1.MicroServiceDeploySpec) {
			s.ResourceRequirements = customv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}}
		})},
			corev1.ResourceList{"requests.cpu": q("42")}},
		{"should limit nothing without instances", nil, corev1.ResourceList{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var specs []*customv1.MicroServiceDeploySpec
			for i := range tt.instances {
				specs = append(specs, &tt.instances[i])
			}
			got := QuotaHard(specs)
			if diff := cmp.Diff(asStrings(tt.want), asStrings(got)); diff != "" {
				t.Errorf("hard (-want +got):\n%s", diff)
			}
		})
	}
}

// asStrings renders quantities as the API server stores them.
func asStrings(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestQuotaLimitsOnlyTheInstancesPodsAndHasNoOwners(t *testing.T) {
	a, b := sample(), sample()
	q := Quota("ns", []*customv1.MicroServiceDeploySpec{&a, &b}, nil)
	if *q.Name != QuotaName || *q.Namespace != "ns" {
		t.Errorf("quota %s/%s", *q.Namespace, *q.Name)
	}
	if len(q.OwnerReferences) != 0 {
		t.Errorf("owner references %v, want none: one per instance would not scale", q.OwnerReferences)
	}
	exprs := q.Spec.ScopeSelector.MatchExpressions
	if len(exprs) != 1 || *exprs[0].ScopeName != corev1.ResourceQuotaScopePriorityClass || *exprs[0].Operator != corev1.ScopeSelectorOpIn ||
		len(exprs[0].Values) != 1 || exprs[0].Values[0] != PriorityClassName {
		t.Errorf("scope selector %+v, want PriorityClass In [%s]", exprs, PriorityClassName)
	}
	c := Build(owner("x"), &a, Options{}, resources.Defaults{}, "")
	if got := c.Deployment.Spec.Template.Spec.PriorityClassName; got == nil || *got != PriorityClassName {
		t.Errorf("pod priorityClassName %v, want %s: the quota would not count the pods", got, PriorityClassName)
	}
	pc := PriorityClass()
	if *pc.Name != PriorityClassName || *pc.Value != 0 || pc.GlobalDefault != nil || *pc.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("PriorityClass %+v, want value 0, not the default, never preempting", pc)
	}
}

func TestCovers(t *testing.T) {
	q := resource.MustParse
	s := sample() // 14 pods of 2 CPU and 4Gi
	tests := []struct {
		name string
		hard corev1.ResourceList
		want bool
	}{
		{"should cover with exactly the instance's need", corev1.ResourceList{"requests.cpu": q("28"), "limits.memory": q("56Gi")}, true},
		{"should cover with more", corev1.ResourceList{"requests.cpu": q("100")}, true},
		{"should cover when the quota limits nothing the instance uses", corev1.ResourceList{"pods": q("1")}, true},
		{"should not cover with less of one resource", corev1.ResourceList{"requests.cpu": q("100"), "limits.memory": q("55Gi")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covers(tt.hard, &s); got != tt.want {
				t.Errorf("Covers(%v) = %v, want %v", tt.hard, got, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		ok   bool
	}{
		{Options{}, true},
		{exposing, true},
		{Options{BaseDomain: "Apps_Example"}, false},
		{Options{AuthURL: "auth.example.com/check"}, false},
		{Options{AuthURL: "ftp://auth.example.com"}, false},
		{Options{IngressClassName: "Bad Class"}, false},
		{Options{AuthURLAnnotation: "not an annotation"}, false},
	} {
		if err := tt.opts.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tt.opts, err, tt.ok)
		}
	}
}

// TestGolden renders the children of the sample in each mode, the handed
// over replica count and the namespace's quota, and compares them with
// testdata/<mode>.golden.yaml.
func TestGolden(t *testing.T) {
	modes := []struct {
		name string
		spec customv1.MicroServiceDeploySpec
		opts Options
	}{
		{"sample", sample(), Options{}},
		{"autoscaling-off", with(func(s *customv1.MicroServiceDeploySpec) { s.Autoscaling = false }), Options{}},
		{"idle", with(func(s *customv1.MicroServiceDeploySpec) { s.Idle = true }), Options{}},
		{"exposed-with-auth", sample(), exposing},
		{"exposed-without-auth", with(func(s *customv1.MicroServiceDeploySpec) { s.NeedAuth = false }), Options{BaseDomain: "apps.example.com"}},
		{"needauth-without-auth-endpoint", sample(), Options{BaseDomain: "apps.example.com"}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			o := owner("ms-sample-v1s0")
			c := Build(o, &m.spec, m.opts, resources.Defaults{}, "")
			objs := append(c.Objects(), c.Handovers()...)
			objs = append(objs, Quota(o.Namespace, []*customv1.MicroServiceDeploySpec{&m.spec}, nil), PriorityClass())
			compareGolden(t, filepath.Join("testdata", m.name+".golden.yaml"), objs)
		})
	}
}

func compareGolden(t *testing.T, golden string, objs []runtime.ApplyConfiguration) {
	t.Helper()
	var got bytes.Buffer
	for i, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			got.WriteString("---\n")
		}
		got.Write(data)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run `go test ./internal/resources/microservicedeploy -update` to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("children differ from %s (-want +got):\n%s", golden, diff)
	}
}

func TestRoomForPodsInUse(t *testing.T) {
	q := resource.MustParse
	hard := corev1.ResourceList{"requests.cpu": q("70m"), "requests.memory": q("224Mi")}
	for _, tc := range []struct {
		name string
		used corev1.ResourceList
		want corev1.ResourceList
	}{
		{"should keep the specs' quota without a status", nil, hard},
		{"should keep the specs' quota while the use fits it", corev1.ResourceList{"requests.cpu": q("30m"), "requests.memory": q("224Mi")}, hard},
		// Three old pods of 2 CPUs each, Pending, after the spec asked for
		// 10m a pod: room for them and for the new spec's pods.
		{"should add the use that exceeds the specs' quota", corev1.ResourceList{"requests.cpu": q("6"), "requests.memory": q("96Mi")},
			corev1.ResourceList{"requests.cpu": q("6070m"), "requests.memory": q("224Mi")}},
		{"should ignore a use of a resource the quota does not limit", corev1.ResourceList{"limits.cpu": q("6")}, hard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RoomForPodsInUse(hard, tc.used)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("RoomForPodsInUse = %v, want %v", got, tc.want)
			}
		})
	}
}
