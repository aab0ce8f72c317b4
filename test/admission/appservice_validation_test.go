package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestAppServiceAdmission checks that the CRD schema and CEL rules reject
// bad input with a message naming the field, and accept the good input.
func TestAppServiceAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	tests := []struct {
		name   string
		mutate func(*appv1.AppService)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"should accept the sample", func(*appv1.AppService) {}, ""},
		{"should reject a negative size", func(a *appv1.AppService) { a.Spec.Size = ptr.To[int32](-1) }, "spec.size"},
		{"should reject a missing size", func(a *appv1.AppService) { a.Spec.Size = nil }, "spec.size"},
		{"should reject an empty image", func(a *appv1.AppService) { a.Spec.Image = "" }, "spec.image"},
		{"should reject no ports", func(a *appv1.AppService) { a.Spec.Ports = nil }, "spec.ports: Required value"},
		{"should reject port 0", func(a *appv1.AppService) { a.Spec.Ports[0].Port = 0 }, "spec.ports[0].port"},
		{"should reject port 70000", func(a *appv1.AppService) { a.Spec.Ports[0].Port = 70000 }, "spec.ports[0].port"},
		{"should reject a nodePort above 65535", func(a *appv1.AppService) { a.Spec.Ports[0].NodePort = 65536 }, "spec.ports[0].nodePort"},
		{"should reject a string targetPort", func(a *appv1.AppService) {
			a.Spec.Ports[0].TargetPort = ptr.To(intstr.FromString("http"))
		}, "spec.ports[].targetPort must be a number"},
		{"should reject a targetPort out of range", func(a *appv1.AppService) {
			a.Spec.Ports[0].TargetPort = ptr.To(intstr.FromInt32(0))
		}, "spec.ports[].targetPort must be a number between 1 and 65535"},
		{"should accept an appProtocol that is a qualified name", func(a *appv1.AppService) {
			a.Spec.Ports[0].AppProtocol = ptr.To("kubernetes.io/h2c")
		}, ""},
		{"should reject an appProtocol a Service refuses", func(a *appv1.AppService) {
			a.Spec.Ports[0].AppProtocol = ptr.To("h2c over tls")
		}, "spec.ports[].appProtocol must be a qualified name"},
		{"should reject duplicate port numbers", func(a *appv1.AppService) {
			a.Spec.Ports = []appv1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
		}, "spec.ports[1]: Duplicate value"},
		{"should accept one port number over two protocols", func(a *appv1.AppService) {
			a.Spec.Ports = []appv1.ServicePort{{Name: "a", Port: 53}, {Name: "b", Port: 53, Protocol: corev1.ProtocolUDP}}
		}, ""},
		{"should reject duplicate port names", func(a *appv1.AppService) {
			a.Spec.Ports = []appv1.ServicePort{{Name: "web", Port: 80}, {Name: "web", Port: 81}}
		}, "spec.ports[].name must be unique"},
		{"should reject unnamed ports when there are several", func(a *appv1.AppService) {
			a.Spec.Ports = []appv1.ServicePort{{Port: 80}, {Port: 81}}
		}, "spec.ports[].name is required when there is more than one port"},
		{"should reject one nodePort on two ports", func(a *appv1.AppService) {
			a.Spec.Ports = []appv1.ServicePort{{Name: "a", Port: 80, NodePort: 30500}, {Name: "b", Port: 81, NodePort: 30500}}
		}, "spec.ports[].nodePort must be unique"},
		{"should reject a nodePort on a ClusterIP Service", func(a *appv1.AppService) {
			a.Spec.ServiceType = corev1.ServiceTypeClusterIP
		}, "nodePort needs serviceType NodePort or LoadBalancer"},
		{"should reject an unknown serviceType", func(a *appv1.AppService) { a.Spec.ServiceType = "ExternalName" }, "spec.serviceType"},
		{"should reject a name that cannot name a Service", func(a *appv1.AppService) { a.Name = "1nginx" }, "metadata.name must be a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &appv1.AppService{}
			testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
			tt.mutate(app)
			testenv.ExpectAdmission(t, k8s.Create(context.Background(), app, client.DryRunAll), tt.wantErr)
		})
	}
}

// TestWebServiceAdmissionSharesTheRules spot-checks that WebService carries
// the same schema.
func TestWebServiceAdmissionSharesTheRules(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	web := &appv1.WebService{}
	testenv.LoadSample(t, "app_v1_webservice.yaml", web, ns)
	web.Spec.Ports[0].TargetPort = ptr.To(intstr.FromString("http"))
	if err := k8s.Create(context.Background(), web, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "targetPort must be a number") {
		t.Fatalf("want a targetPort rejection, got %v", err)
	}
}
