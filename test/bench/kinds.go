package bench

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

// workload is one kind of application the benchmark creates N of.
type workload struct {
	// name names the workload in the results.
	name string
	// controller is the name of the operator's controller for the kind (and
	// so its field owner and its reconcile metrics).
	controller string
	gvr        schema.GroupVersionResource
	// pods says whether the applications run pods.
	pods bool
	// maxN, when above 0, caps N: pods by the fake node's capacity (110),
	// node ports by their range.
	maxN int
	// newObject returns application i in namespace ns.
	newObject func(ns, name string, i int) client.Object
	// update changes one field of the spec (the update fan-out), from an
	// object as newObject made it; it returns a JSON merge patch.
	update []byte
}

var workloads = map[string]workload{
	// AppService with no pods: what the operator does, without pod churn.
	"appservice": {
		name: "appservice", controller: "appservice",
		gvr:       appv1.GroupVersion.WithResource("appservices"),
		newObject: appService(0),
		update:    []byte(`{"spec":{"image":"nginx:1.28"}}`),
	},
	// The same with one pod each: scheduling, kwok and Deployment status
	// updates add events the operator reacts to.
	"appservice-pods": {
		name: "appservice-pods", controller: "appservice", pods: true, maxN: 100,
		gvr:       appv1.GroupVersion.WithResource("appservices"),
		newObject: appService(1),
		update:    []byte(`{"spec":{"image":"nginx:1.28"}}`),
	},
	// MicroServiceDeploy: four children each, and one ResourceQuota per
	// namespace that every instance adds to (the quota fan-out).
	"microservicedeploy": {
		name: "microservicedeploy", controller: "microservicedeploy",
		gvr: customv1.GroupVersion.WithResource("microservicedeploys"),
		newObject: func(ns, name string, i int) client.Object {
			return &customv1.MicroServiceDeploy{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: customv1.MicroServiceDeploySpec{
					MsName: name, FullName: name, Version: "1.0", Path: "v1",
					Image: "registry.example/ms:1.0", Replicas: ptr.To[int32](0),
					Config: fmt.Sprintf("instance=%d", i),
				},
			}
		},
		update: []byte(`{"spec":{"image":"registry.example/ms:1.1"}}`),
	},
	// Memcached: the operator also watches its pods (none here: size 0).
	"memcached": {
		name: "memcached", controller: "memcached",
		gvr: cachev1alpha1.GroupVersion.WithResource("memcacheds"),
		newObject: func(ns, name string, _ int) client.Object {
			return &cachev1alpha1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       cachev1alpha1.MemcachedSpec{Size: 0},
			}
		},
		update: []byte(`{"spec":{"image":"memcached:1.6.30"}}`),
	},
	// MyWeb: a ConfigMap, a Deployment (no pods: replicas 0) and a NodePort
	// Service each. Node ports are cluster-wide, so every application
	// takes its own, and the range caps N (see myWebNodePort).
	"myweb": {
		name: "myweb", controller: "myweb", maxN: lastNodePort - firstNodePort - 1,
		gvr: operatorv1.GroupVersion.WithResource("mywebs"),
		newObject: func(ns, name string, i int) client.Object {
			return &operatorv1.MyWeb{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: operatorv1.MyWebSpec{
					Image: "nginx:1.27", NodePortNumber: myWebNodePort(name, i), Replicas: ptr.To[int32](0),
					PageContentHtml: fmt.Sprintf("<html><body><h1>Application %d</h1></body></html>\n", i),
				},
			}
		},
		update: []byte(`{"spec":{"image":"nginx:1.28"}}`),
	},
}

// The API server's default node port range.
const firstNodePort, lastNodePort = 30000, 32767

// myWebNodePort is the node port of MyWeb application i: 30000+i, and the
// last two ports of the range for the probes, which are created with i=0.
func myWebNodePort(name string, i int) int32 {
	switch name {
	case "probe-backlog":
		return lastNodePort
	case "probe-idle":
		return lastNodePort - 1
	}
	return int32(firstNodePort + i)
}

// appService returns the newObject of an AppService workload whose
// applications run size pods each.
func appService(size int32) func(ns, name string, i int) client.Object {
	return func(ns, name string, _ int) client.Object {
		return &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appv1.AppServiceSpec{
				Size: ptr.To(size), Image: "nginx:1.27",
				Ports:       []appv1.ServicePort{{Port: 80}},
				ServiceType: "ClusterIP",
			},
		}
	}
}

// WorkloadNames lists the workloads the benchmark knows.
func WorkloadNames() []string {
	return []string{"appservice", "microservicedeploy", "memcached", "myweb", "appservice-pods"}
}
