package memcached

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/podsecurity"
	"github.com/app-operator/app-operator/internal/resources"
)

var owner = resources.Owner{GVK: cachev1alpha1.GroupVersion.WithKind("Memcached"), Name: "cache", Namespace: "ns", UID: "uid-1"}

func memory(limit, request string) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	if limit != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}
	}
	if request != "" {
		r.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}
	}
	return r
}

func TestCacheMegabytes(t *testing.T) {
	tests := []struct {
		name   string
		res    corev1.ResourceRequirements
		wantMB int64
		wantOK bool
	}{
		{"should keep 32 MiB of headroom below a small limit", memory("128Mi", ""), 96, true},
		{"should keep 32 MiB of headroom below a 64 MiB limit", memory("64Mi", ""), 32, true},
		{"should keep half of a limit below 64 MiB", memory("40Mi", ""), 20, true},
		{"should keep a fifth of a large limit as headroom", memory("1Gi", ""), 820, true},
		{"should read a decimal limit in mebibytes", memory("1G", ""), 763, true},
		{"should follow the limit rather than the request", memory("256Mi", "128Mi"), 205, true},
		{"should fall back to the request without a limit", memory("", "512Mi"), 410, true},
		{"should never go below 1 MB", memory("1Mi", ""), 1, true},
		{"should leave memcached's default without any memory figure", corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mb, ok := CacheMegabytes(tt.res)
			if mb != tt.wantMB || ok != tt.wantOK {
				t.Errorf("CacheMegabytes = %d, %v; want %d, %v", mb, ok, tt.wantMB, tt.wantOK)
			}
			if lim, found := tt.res.Limits[corev1.ResourceMemory]; found && lim.Value() >= 2<<20 && mb<<20 >= lim.Value() {
				t.Errorf("cache of %d MB does not fit below the %s limit", mb, lim.String())
			}
		})
	}
}

func TestBuildDeployment(t *testing.T) {
	tests := []struct {
		name          string
		spec          cachev1alpha1.MemcachedSpec
		wantReplicas  int32
		wantImage     string
		wantArgs      []string
		wantResources *corev1.ResourceRequirements // nil: no resources set
	}{
		{
			name:         "should default the image and resources and derive -m from the default limit",
			spec:         cachev1alpha1.MemcachedSpec{Size: 3},
			wantReplicas: 3,
			wantImage:    cachev1alpha1.DefaultImage,
			wantArgs:     []string{"-p", "11211", "-m", "96"},
			wantResources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		},
		{
			name: "should use the given image and resources and derive -m from the given limit",
			spec: cachev1alpha1.MemcachedSpec{Size: 2, Image: "registry.example.com/memcached:1.6.40", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}},
			wantReplicas: 2,
			wantImage:    "registry.example.com/memcached:1.6.40",
			wantArgs:     []string{"-p", "11211", "-m", "820"},
			wantResources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
		},
		{
			name:         "should leave -m and resources out when resources are given empty",
			spec:         cachev1alpha1.MemcachedSpec{Size: 1, Resources: &corev1.ResourceRequirements{}},
			wantReplicas: 1,
			wantImage:    cachev1alpha1.DefaultImage,
			wantArgs:     []string{"-p", "11211"},
		},
		{
			name:         "should keep zero replicas",
			spec:         cachev1alpha1.MemcachedSpec{Size: 0},
			wantReplicas: 0,
			wantImage:    cachev1alpha1.DefaultImage,
			wantArgs:     []string{"-p", "11211", "-m", "96"},
			wantResources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Build(owner, &tt.spec, resources.Defaults{}).Deployment
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tt.wantReplicas {
				t.Errorf("replicas = %v, want %d", d.Spec.Replicas, tt.wantReplicas)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if *c.Image != tt.wantImage {
				t.Errorf("image = %s, want %s", *c.Image, tt.wantImage)
			}
			if diff := cmp.Diff(tt.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			var got *corev1.ResourceRequirements
			if c.Resources != nil {
				got = resources.Convert[corev1.ResourceRequirements](c.Resources)
			}
			if diff := cmp.Diff(tt.wantResources, got); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPodTemplate(t *testing.T) {
	d := Build(owner, &cachev1alpha1.MemcachedSpec{Size: 3}, resources.Defaults{}).Deployment
	wantSelector := map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache"}
	if diff := cmp.Diff(wantSelector, d.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	// The pod watch maps pods back to their Memcached by these labels, and
	// the cache only holds pods labelled managed-by.
	wantPodLabels := map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache", resources.LabelManagedBy: resources.ManagedBy}
	if diff := cmp.Diff(wantPodLabels, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}

	pod := d.Spec.Template.Spec
	if len(pod.TopologySpreadConstraints) != 1 {
		t.Fatalf("topology spread constraints = %+v, want one", pod.TopologySpreadConstraints)
	}
	spread := pod.TopologySpreadConstraints[0]
	if *spread.WhenUnsatisfiable != corev1.ScheduleAnyway || *spread.TopologyKey != "kubernetes.io/hostname" || *spread.MaxSkew != 1 {
		t.Errorf("spread = %+v: pods must be spread across nodes without ever being left pending", spread)
	}
	if diff := cmp.Diff(wantSelector, spread.LabelSelector.MatchLabels); diff != "" {
		t.Errorf("spread selector (-want +got):\n%s", diff)
	}
	if pod.Affinity != nil {
		t.Errorf("affinity = %+v: a required rule could leave pods pending", pod.Affinity)
	}

	c := pod.Containers[0]
	if len(c.Ports) != 1 || *c.Ports[0].ContainerPort != Port || *c.Ports[0].Name != PortName {
		t.Errorf("container ports = %+v, want %s/%d", c.Ports, PortName, Port)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket.Port.StrVal != PortName || c.LivenessProbe == nil {
		t.Errorf("probes: readiness %+v, liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", pod.AutomountServiceAccountToken)
	}
	ref := d.OwnerReferences[0]
	if *ref.Kind != "Memcached" || *ref.APIVersion != "cache.example.com/v1alpha1" || string(*ref.UID) != "uid-1" || !*ref.Controller {
		t.Errorf("owner reference = %+v", ref)
	}
}

func TestBuildSecurityContexts(t *testing.T) {
	tests := []struct {
		name     string
		settings podsecurity.Settings
		defaults resources.Defaults
		// want* describe the contexts: the uid set, runAsNonRoot, read-only root.
		wantUID        *int64
		wantNonRoot    bool
		wantReadOnlyFS bool
		wantNoEscalate bool
		wantDropAll    bool
		wantSeccompPod bool
	}{
		{
			name:    "should run as the image's memcache uid under the default Baseline profile",
			wantUID: ptr.To[int64](11211), wantNoEscalate: true, wantSeccompPod: true,
		},
		{
			name:     "should lock the pod down under the Restricted profile, with a numeric uid the kubelet can check",
			settings: podsecurity.Settings{SecurityProfile: podsecurity.Restricted},
			wantUID:  ptr.To[int64](11211), wantNonRoot: true, wantReadOnlyFS: true, wantNoEscalate: true, wantDropAll: true, wantSeccompPod: true,
		},
		{
			name:     "should follow the operator's default profile",
			defaults: resources.Defaults{SecurityProfile: podsecurity.Restricted},
			wantUID:  ptr.To[int64](11211), wantNonRoot: true, wantReadOnlyFS: true, wantNoEscalate: true, wantDropAll: true, wantSeccompPod: true,
		},
		{
			name: "should take the user's own pod security context as it is",
			settings: podsecurity.Settings{SecurityProfile: podsecurity.Restricted,
				PodSecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1001), RunAsNonRoot: ptr.To(true)}},
			wantUID: ptr.To[int64](1001), wantNonRoot: true, wantReadOnlyFS: true, wantNoEscalate: true, wantDropAll: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := cachev1alpha1.MemcachedSpec{Size: 1, Settings: tt.settings}
			pod := Build(owner, &spec, tt.defaults).Deployment.Spec.Template.Spec
			psc, sc := pod.SecurityContext, pod.Containers[0].SecurityContext
			if !cmp.Equal(tt.wantUID, psc.RunAsUser) {
				t.Errorf("runAsUser = %v, want %v", ptr.Deref(psc.RunAsUser, -1), ptr.Deref(tt.wantUID, -1))
			}
			if got := ptr.Deref(psc.RunAsNonRoot, false); got != tt.wantNonRoot {
				t.Errorf("runAsNonRoot = %v, want %v", got, tt.wantNonRoot)
			}
			if got := psc.SeccompProfile != nil && *psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault; got != tt.wantSeccompPod {
				t.Errorf("pod seccomp RuntimeDefault = %v, want %v", got, tt.wantSeccompPod)
			}
			if got := ptr.Deref(sc.ReadOnlyRootFilesystem, false); got != tt.wantReadOnlyFS {
				t.Errorf("readOnlyRootFilesystem = %v, want %v", got, tt.wantReadOnlyFS)
			}
			if got := sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation; got != tt.wantNoEscalate {
				t.Errorf("allowPrivilegeEscalation false = %v, want %v", got, tt.wantNoEscalate)
			}
			if got := sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}); got != tt.wantDropAll {
				t.Errorf("capabilities drop ALL = %v, want %v", got, tt.wantDropAll)
			}
		})
	}
}

func TestBuildHeadlessService(t *testing.T) {
	svc := Build(owner, &cachev1alpha1.MemcachedSpec{Size: 3}, resources.Defaults{}).Service
	if *svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("clusterIP = %q, want None: clients must resolve every pod", *svc.Spec.ClusterIP)
	}
	if len(svc.Spec.Ports) != 1 || *svc.Spec.Ports[0].Port != Port || svc.Spec.Ports[0].TargetPort.StrVal != PortName {
		t.Errorf("ports = %+v", svc.Spec.Ports)
	}
	if diff := cmp.Diff(Selector("cache"), svc.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
}

func TestBuildPodDisruptionBudget(t *testing.T) {
	tests := []struct {
		name    string
		size    int32
		wantPDB bool
	}{
		{"should not budget zero pods", 0, false},
		{"should not budget a single pod, which would block every drain", 1, false},
		{"should budget two pods", 2, true},
		{"should budget the sample's three pods", 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(owner, &cachev1alpha1.MemcachedSpec{Size: tt.size}, resources.Defaults{})
			pdb := c.PodDisruptionBudget
			if (pdb != nil) != tt.wantPDB {
				t.Fatalf("PodDisruptionBudget = %v, want one: %v", pdb, tt.wantPDB)
			}
			wantObjects := 2
			if tt.wantPDB {
				wantObjects = 3
				if pdb.Spec.MaxUnavailable.IntValue() != 1 || *pdb.Name != "cache" {
					t.Errorf("PodDisruptionBudget %s maxUnavailable %v, want cache and 1", *pdb.Name, pdb.Spec.MaxUnavailable)
				}
				if diff := cmp.Diff(Selector("cache"), pdb.Spec.Selector.MatchLabels); diff != "" {
					t.Errorf("selector (-want +got):\n%s", diff)
				}
			}
			objs := c.Objects()
			if len(objs) != wantObjects {
				t.Errorf("Objects() has %d children, want %d", len(objs), wantObjects)
			}
			for i, o := range objs {
				if o == nil || reflect.ValueOf(o).IsNil() {
					t.Errorf("Objects()[%d] is nil", i)
				}
			}
		})
	}
}

func TestTwoMemcachedsNeverSharePods(t *testing.T) {
	other := owner
	other.Name = "cache-2"
	a, b := Build(owner, &cachev1alpha1.MemcachedSpec{Size: 2}, resources.Defaults{}), Build(other, &cachev1alpha1.MemcachedSpec{Size: 2}, resources.Defaults{})
	sa, sb := a.Deployment.Spec.Selector.MatchLabels, b.Deployment.Spec.Selector.MatchLabels
	if matches(sa, b.Deployment.Spec.Template.Labels) || matches(sb, a.Deployment.Spec.Template.Labels) {
		t.Errorf("the selector of one Memcached matches the pods of the other: %v, %v", sa, sb)
	}
}

// matches reports whether every label of selector is in labels.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestResourcesDefaultOnlyWhenLeftOut(t *testing.T) {
	given := &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	if diff := cmp.Diff(*given, Resources(&cachev1alpha1.MemcachedSpec{Resources: given})); diff != "" {
		t.Errorf("given resources were changed (-want +got):\n%s", diff)
	}
	def := Resources(&cachev1alpha1.MemcachedSpec{})
	if def.Limits.Memory().String() != cachev1alpha1.DefaultMemory || def.Requests.Cpu().String() != cachev1alpha1.DefaultCPURequest {
		t.Errorf("default resources = %+v", def)
	}
}
