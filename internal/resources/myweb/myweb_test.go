package myweb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

var owner = resources.Owner{GVK: operatorv1.GroupVersion.WithKind("MyWeb"), Name: "web", Namespace: "ns", UID: "uid-1"}

const page = "<html><body><h1>Hello</h1></body></html>\n"

func TestPageHash(t *testing.T) {
	tests := []struct {
		name string
		html string
		want string
	}{
		// Fixed values: a different hash function would roll every pod of
		// every MyWeb when the operator is upgraded. (sha256sum agrees.)
		{"should hash the empty page", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"should hash a page", "hello\n", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PageHash(tt.html); got != tt.want {
				t.Errorf("PageHash(%q) = %s, want %s", tt.html, got, tt.want)
			}
		})
	}
}

func TestPodTemplateChangesExactlyWithThePage(t *testing.T) {
	base := operatorv1.MyWebSpec{Image: "nginx", NodePortNumber: 30100, PageContentHtml: page}
	tests := []struct {
		name   string
		mutate func(*operatorv1.MyWebSpec)
		// wantRoll: the pod template's hash annotation changes.
		wantRoll bool
		// wantSameDeployment: the Deployment does not change at all.
		wantSameDeployment bool
	}{
		{"should roll the pods when the page changes", func(s *operatorv1.MyWebSpec) { s.PageContentHtml = "<h1>Bye</h1>" }, true, false},
		{"should roll the pods when only whitespace changes", func(s *operatorv1.MyWebSpec) { s.PageContentHtml = page + " " }, true, false},
		{"should roll the pods when the page is emptied", func(s *operatorv1.MyWebSpec) { s.PageContentHtml = "" }, true, false},
		{"should leave the Deployment alone when only the node port changes", func(s *operatorv1.MyWebSpec) { s.NodePortNumber = 30200 }, false, true},
		{"should keep the hash when only the replicas change", func(s *operatorv1.MyWebSpec) { s.Replicas = ptr.To[int32](3) }, false, false},
		{"should keep the hash when only the image changes", func(s *operatorv1.MyWebSpec) { s.Image = "nginx:1.27" }, false, false},
		{"should leave the Deployment alone when nothing changes", func(*operatorv1.MyWebSpec) {}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			tt.mutate(&changed)
			before, after := Build(owner, &base, resources.Defaults{}).Deployment, Build(owner, &changed, resources.Defaults{}).Deployment
			beforeHash := before.Spec.Template.Annotations[PageHashAnnotation]
			afterHash := after.Spec.Template.Annotations[PageHashAnnotation]
			if beforeHash == "" || afterHash == "" {
				t.Fatalf("no %s annotation on the pod template", PageHashAnnotation)
			}
			if got := beforeHash != afterHash; got != tt.wantRoll {
				t.Errorf("hash changed = %v, want %v (%s -> %s)", got, tt.wantRoll, beforeHash, afterHash)
			}
			if got := cmp.Equal(before, after); got != tt.wantSameDeployment {
				t.Errorf("Deployment unchanged = %v, want %v:\n%s", got, tt.wantSameDeployment, cmp.Diff(before, after))
			}
		})
	}
}

func TestBuildConfigMap(t *testing.T) {
	tests := []struct {
		name string
		html string
	}{
		{"should hold the page as index.html", page},
		{"should hold an empty page as an empty index.html", ""},
		{"should keep multibyte text unchanged", "<h1>預期狀態</h1>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := Build(owner, &operatorv1.MyWebSpec{Image: "nginx", NodePortNumber: 30100, PageContentHtml: tt.html}, resources.Defaults{}).ConfigMap
			if diff := cmp.Diff(map[string]string{"index.html": tt.html}, cm.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if *cm.Name != "web" || *cm.Namespace != "ns" {
				t.Errorf("ConfigMap %s/%s, want ns/web", *cm.Namespace, *cm.Name)
			}
		})
	}
}

func TestBuildDeployment(t *testing.T) {
	tests := []struct {
		name         string
		spec         operatorv1.MyWebSpec
		wantReplicas int32
	}{
		{"should run one pod by default, as the seed does", operatorv1.MyWebSpec{Image: "nginx", PageContentHtml: page}, 1},
		{"should run the replicas asked for", operatorv1.MyWebSpec{Image: "nginx:1.27", PageContentHtml: page, Replicas: ptr.To[int32](3)}, 3},
		{"should scale to zero when asked", operatorv1.MyWebSpec{Image: "nginx", PageContentHtml: page, Replicas: ptr.To[int32](0)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Build(owner, &tt.spec, resources.Defaults{}).Deployment
			if *d.Spec.Replicas != tt.wantReplicas {
				t.Errorf("replicas = %d, want %d", *d.Spec.Replicas, tt.wantReplicas)
			}
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			if *c.Image != tt.spec.Image {
				t.Errorf("image = %s, want %s", *c.Image, tt.spec.Image)
			}
			if len(c.Ports) != 1 || *c.Ports[0].ContainerPort != 80 || *c.Ports[0].Name != "http" {
				t.Errorf("container ports = %+v, want http 80", c.Ports)
			}
			// The volume is the ConfigMap of the same name, mounted where
			// nginx serves its default site.
			if len(pod.Volumes) != 1 || len(c.VolumeMounts) != 1 {
				t.Fatalf("volumes %+v, mounts %+v: want one of each", pod.Volumes, c.VolumeMounts)
			}
			v, m := pod.Volumes[0], c.VolumeMounts[0]
			if v.ConfigMap == nil || *v.ConfigMap.Name != "web" {
				t.Errorf("volume %s does not reference ConfigMap web: %+v", *v.Name, v)
			}
			if len(v.ConfigMap.Items) != 1 || *v.ConfigMap.Items[0].Key != "index.html" || *v.ConfigMap.Items[0].Path != "index.html" {
				t.Errorf("volume items = %+v, want index.html", v.ConfigMap.Items)
			}
			if *m.Name != *v.Name || *m.MountPath != "/usr/share/nginx/html" || !*m.ReadOnly {
				t.Errorf("mount = %s at %s (read-only %v), want %s at /usr/share/nginx/html read-only", *m.Name, *m.MountPath, *m.ReadOnly, *v.Name)
			}
			if got := d.Spec.Template.Annotations[PageHashAnnotation]; got != PageHash(tt.spec.PageContentHtml) {
				t.Errorf("page hash annotation = %q", got)
			}
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || *p.HTTPGet.Path != "/" || *p.HTTPGet.Port != intstr.FromString("http") {
				t.Errorf("readiness probe = %+v, want GET / on http", p)
			}
			wantSelector := map[string]string{"app": "web", resources.LabelName: "myweb", resources.LabelInstance: "web"}
			if diff := cmp.Diff(wantSelector, d.Spec.Selector.MatchLabels); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(resources.Labels(wantSelector), d.Spec.Template.Labels); diff != "" {
				t.Errorf("pod labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildService(t *testing.T) {
	tests := []struct {
		name     string
		nodePort int32
	}{
		{"should expose the seed's node port", 30100},
		{"should expose another node port", 32767},
		// The schema allows 1-65535; the cluster's range is checked by the
		// API server, whose message the operator reports.
		{"should pass a port outside the cluster's range on to the API server", 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := Build(owner, &operatorv1.MyWebSpec{Image: "nginx", NodePortNumber: tt.nodePort}, resources.Defaults{}).Service
			if *svc.Spec.Type != corev1.ServiceTypeNodePort {
				t.Errorf("type = %s, want NodePort", *svc.Spec.Type)
			}
			if len(svc.Spec.Ports) != 1 {
				t.Fatalf("%d ports, want 1", len(svc.Spec.Ports))
			}
			p := svc.Spec.Ports[0]
			got := []any{*p.Port, *p.Protocol, *p.TargetPort, *p.NodePort}
			want := []any{int32(80), corev1.ProtocolTCP, intstr.FromString("http"), tt.nodePort}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("port, protocol, targetPort, nodePort (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Selector(owner), svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChildrenAreOwnedAndAppliedServiceFirst(t *testing.T) {
	c := Build(owner, &operatorv1.MyWebSpec{Image: "nginx", NodePortNumber: 30100, PageContentHtml: page}, resources.Defaults{})
	objs := c.Objects()
	if len(objs) != 3 || objs[0] != c.Service || objs[1] != c.ConfigMap || objs[2] != c.Deployment {
		t.Fatalf("apply order = %T, want Service, ConfigMap, Deployment", objs)
	}
	for _, meta := range []struct {
		kind   string
		labels map[string]string
		refs   int
		ref    *string
		ctrl   *bool
	}{
		{"Service", c.Service.Labels, len(c.Service.OwnerReferences), c.Service.OwnerReferences[0].Kind, c.Service.OwnerReferences[0].Controller},
		{"ConfigMap", c.ConfigMap.Labels, len(c.ConfigMap.OwnerReferences), c.ConfigMap.OwnerReferences[0].Kind, c.ConfigMap.OwnerReferences[0].Controller},
		{"Deployment", c.Deployment.Labels, len(c.Deployment.OwnerReferences), c.Deployment.OwnerReferences[0].Kind, c.Deployment.OwnerReferences[0].Controller},
	} {
		if meta.refs != 1 || *meta.ref != "MyWeb" || !*meta.ctrl {
			t.Errorf("%s owner references: %d, kind %s, controller %v", meta.kind, meta.refs, *meta.ref, *meta.ctrl)
		}
		if meta.labels[resources.LabelManagedBy] != resources.ManagedBy || meta.labels[resources.LabelInstance] != "web" {
			t.Errorf("%s labels = %v", meta.kind, meta.labels)
		}
	}
}
