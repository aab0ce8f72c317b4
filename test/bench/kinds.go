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
)

// workload is one kind of application the benchmark creates N of.
type workload struct {
	// name names the workload in the results.
	name string
	// controller is the name of the operator's controller for the kind (and
	// so its field owner and its reconcile metrics).
	controller string
	gvr        schema.GroupVersionResource
	// pods says whether the applications run pods. Pods are capped by the
	// fake node's capacity (110), so such a workload runs at most maxN.
	pods bool
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
	return []string{"appservice", "microservicedeploy", "memcached", "appservice-pods"}
}
