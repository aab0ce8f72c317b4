package appservice

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

var owner = resources.Owner{GVK: appv1.GroupVersion.WithKind("AppService"), Name: "web", Namespace: "ns", UID: "uid-1"}

func TestBuildService(t *testing.T) {
	tests := []struct {
		name     string
		spec     appv1.AppServiceSpec
		wantType corev1.ServiceType
		// want is port:protocol:targetPort:nodePort per Service port.
		want []string
	}{
		{
			name:     "defaults to NodePort, TCP and targetPort = port",
			spec:     appv1.AppServiceSpec{Ports: []appv1.ServicePort{{Port: 80}}},
			wantType: corev1.ServiceTypeNodePort,
			want:     []string{"80:TCP:80:0"},
		},
		{
			name: "keeps an explicit nodePort and targetPort",
			spec: appv1.AppServiceSpec{Ports: []appv1.ServicePort{
				{Name: "http", Port: 80, TargetPort: ptr.To(intstr.FromInt32(8080)), NodePort: 30002},
			}},
			wantType: corev1.ServiceTypeNodePort,
			want:     []string{"80:TCP:8080:30002"},
		},
		{
			name: "drops nodePort for a ClusterIP Service",
			spec: appv1.AppServiceSpec{ServiceType: corev1.ServiceTypeClusterIP, Ports: []appv1.ServicePort{
				{Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053},
			}},
			wantType: corev1.ServiceTypeClusterIP,
			want:     []string{"53:UDP:53:0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := Build(owner, &tt.spec, resources.Defaults{}).Service
			if *svc.Spec.Type != tt.wantType {
				t.Errorf("type = %s, want %s", *svc.Spec.Type, tt.wantType)
			}
			var got []string
			for _, p := range svc.Spec.Ports {
				np := int32(0)
				if p.NodePort != nil {
					np = *p.NodePort
				}
				got = append(got, cmpPort(*p.Port, *p.Protocol, p.TargetPort.IntVal, np))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func cmpPort(port int32, proto corev1.Protocol, target, node int32) string {
	return fmt.Sprintf("%d:%s:%d:%d", port, proto, target, node)
}

func TestBuildDeployment(t *testing.T) {
	spec := appv1.AppServiceSpec{
		Size:  ptr.To[int32](3),
		Image: "nginx:1.27",
		Envs:  []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")},
		},
		Ports: []appv1.ServicePort{
			{Name: "http", Port: 80, TargetPort: ptr.To(intstr.FromInt32(8080))},
			{Name: "alt", Port: 8080},                               // same container port: opened once
			{Name: "dns", Port: 8080, Protocol: corev1.ProtocolUDP}, // other protocol: opened again
		},
		PodLabels:      map[string]string{"team": "web", "app": "hijack"},
		PodAnnotations: map[string]string{"prometheus.io/scrape": "true"},
	}
	d := Build(owner, &spec, resources.Defaults{}).Deployment

	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if *c.Name != "web" || *c.Image != "nginx:1.27" {
		t.Errorf("container name %s image %s", *c.Name, *c.Image)
	}
	ports := make([]string, 0, len(c.Ports))
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", *p.ContainerPort, *p.Protocol))
	}
	if diff := cmp.Diff([]string{"8080/TCP", "8080/UDP"}, ports); diff != "" {
		t.Errorf("container ports (-want +got):\n%s", diff)
	}
	// Ready once the first port accepts connections; the Service sends
	// nothing before, and a stopping pod keeps serving while it drains.
	if p := c.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != 8080 {
		t.Errorf("readiness probe = %+v, want a TCP connect to 8080", p)
	}
	if c.Lifecycle == nil || *c.Lifecycle.PreStop.Sleep.Seconds != resources.DrainSeconds {
		t.Errorf("lifecycle = %+v, want a preStop sleep of %d s", c.Lifecycle, resources.DrainSeconds)
	}
	if len(c.Env) != 2 || *c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("env not carried over: %+v", c.Env)
	}
	if got := c.Resources.Requests.Cpu().String(); got != "500m" {
		t.Errorf("cpu request = %s, want 500m", got)
	}
	wantSelector := map[string]string{"app": "web", resources.LabelName: "appservice", resources.LabelInstance: "web"}
	if diff := cmp.Diff(wantSelector, d.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	podLabels := d.Spec.Template.Labels
	if podLabels["app"] != "web" || podLabels["team"] != "web" || podLabels[resources.LabelManagedBy] != resources.ManagedBy {
		t.Errorf("pod labels = %v: user labels must be added but never override the selector", podLabels)
	}
	if d.Spec.Template.Annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("pod annotations = %v", d.Spec.Template.Annotations)
	}
	ref := d.OwnerReferences[0]
	if *ref.Kind != "AppService" || string(*ref.UID) != "uid-1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference = %+v", ref)
	}
}

func TestBuildOmitsWhatTheSpecLeavesOut(t *testing.T) {
	d := Build(owner, &appv1.AppServiceSpec{Image: "nginx"}, resources.Defaults{}).Deployment
	c := d.Spec.Template.Spec.Containers[0]
	if d.Spec.Replicas != nil || c.Resources != nil || c.Env != nil || d.Spec.Template.Annotations != nil {
		t.Errorf("the builder set fields the spec leaves out: replicas %v, resources %v, env %v, annotations %v",
			d.Spec.Replicas, c.Resources, c.Env, d.Spec.Template.Annotations)
	}
}

func TestWebServiceSelectorDiffersFromAppService(t *testing.T) {
	web := owner
	web.GVK.Kind = "WebService"
	a, w := Selector(owner), Selector(web)
	if cmp.Equal(a, w) {
		t.Errorf("an AppService and a WebService of one name share the selector %v", a)
	}
}
