// Package kinds is the one list of the kinds app-operator serves. The
// scheme, the cache's scope, the controllers, the fuzz and dry-run inputs,
// the test suites' helpers and the checks of the docs are derived from it,
// so a kind added here is served, cached, fuzzed and documented, or a test
// says which of these it lacks.
package kinds

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	redislabsv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Kind is one kind of custom resource the operator serves.
type Kind struct {
	// GVK is the kind's group, version and kind, as the seeds wrote them.
	GVK schema.GroupVersionKind
	// Plural is the resource's plural name, as in its CRD's name
	// (<plural>.<group>).
	Plural string
	// New returns an empty resource of the kind; NewList an empty list.
	New     func() client.Object
	NewList func() client.ObjectList
	// AddToScheme registers the kind's API group.
	AddToScheme func(*runtime.Scheme) error
	// Builder is the folder under internal/resources of the package that
	// builds the kind's children (AppService and WebService share one).
	Builder string
	// Sample is the kind's sample, relative to config/samples.
	Sample string
	// Stateful says that the kind runs a data service whose Ready needs
	// the application itself to answer (members that elect a leader, a
	// primary that takes writes): on fake nodes, where no container runs,
	// such a resource never becomes Ready, so suites on fake nodes leave it
	// to the suites on real pods.
	Stateful bool
}

// Name is the lower-case kind. It names the kind's controller, its field
// manager (app-operator-<name>) and its value of app.kubernetes.io/name.
func (k Kind) Name() string { return strings.ToLower(k.GVK.Kind) }

// CRD is the name of the kind's CustomResourceDefinition.
func (k Kind) CRD() string { return k.Plural + "." + k.GVK.Group }

// All returns every kind the operator serves, in the order the README
// lists them.
func All() []Kind {
	return []Kind{
		{
			GVK: appv1.GroupVersion.WithKind("AppService"), Plural: "appservices",
			New:         func() client.Object { return &appv1.AppService{} },
			NewList:     func() client.ObjectList { return &appv1.AppServiceList{} },
			AddToScheme: appv1.AddToScheme, Builder: "appservice", Sample: "app_v1_appservice.yaml",
		},
		{
			GVK: appv1.GroupVersion.WithKind("WebService"), Plural: "webservices",
			New:         func() client.Object { return &appv1.WebService{} },
			NewList:     func() client.ObjectList { return &appv1.WebServiceList{} },
			AddToScheme: appv1.AddToScheme, Builder: "appservice", Sample: "app_v1_webservice.yaml",
		},
		{
			GVK: customv1.GroupVersion.WithKind("MicroServiceDeploy"), Plural: "microservicedeploys",
			New:         func() client.Object { return &customv1.MicroServiceDeploy{} },
			NewList:     func() client.ObjectList { return &customv1.MicroServiceDeployList{} },
			AddToScheme: customv1.AddToScheme, Builder: "microservicedeploy", Sample: "custom_v1_microservicedeploy.yaml",
		},
		{
			GVK: cachev1alpha1.GroupVersion.WithKind("Memcached"), Plural: "memcacheds",
			New:         func() client.Object { return &cachev1alpha1.Memcached{} },
			NewList:     func() client.ObjectList { return &cachev1alpha1.MemcachedList{} },
			AddToScheme: cachev1alpha1.AddToScheme, Builder: "memcached", Sample: "cache_v1alpha1_memcached.yaml",
		},
		{
			GVK: operatorv1.GroupVersion.WithKind("MyWeb"), Plural: "mywebs",
			New:         func() client.Object { return &operatorv1.MyWeb{} },
			NewList:     func() client.ObjectList { return &operatorv1.MyWebList{} },
			AddToScheme: operatorv1.AddToScheme, Builder: "myweb", Sample: "operator_v1_myweb.yaml",
		},
		{
			GVK: redislabsv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Plural: "redisenterpriseclusters",
			New:         func() client.Object { return &redislabsv1alpha1.RedisEnterpriseCluster{} },
			NewList:     func() client.ObjectList { return &redislabsv1alpha1.RedisEnterpriseClusterList{} },
			AddToScheme: redislabsv1alpha1.AddToScheme, Builder: "redisenterprisecluster", Sample: "app_v1alpha1_redisenterprisecluster.yaml",
			Stateful: true,
		},
		{
			GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Plural: "etcdclusters",
			New:         func() client.Object { return &etcdv1beta2.EtcdCluster{} },
			NewList:     func() client.ObjectList { return &etcdv1beta2.EtcdClusterList{} },
			AddToScheme: etcdv1beta2.AddToScheme, Builder: "etcdcluster", Sample: "etcd/etcd_v1beta2_etcdcluster.yaml",
			Stateful: true,
		},
		{
			GVK: etcdv1beta2.GroupVersion.WithKind("EtcdBackup"), Plural: "etcdbackups",
			New:         func() client.Object { return &etcdv1beta2.EtcdBackup{} },
			NewList:     func() client.ObjectList { return &etcdv1beta2.EtcdBackupList{} },
			AddToScheme: etcdv1beta2.AddToScheme, Builder: "etcdbackup", Sample: "etcd/etcd_v1beta2_etcdbackup.yaml",
			Stateful: true,
		},
		{
			// The restore's builder is the backup's: the location of a
			// snapshot, which the restored cluster's first member reads.
			GVK: etcdv1beta2.GroupVersion.WithKind("EtcdRestore"), Plural: "etcdrestores",
			New:         func() client.Object { return &etcdv1beta2.EtcdRestore{} },
			NewList:     func() client.ObjectList { return &etcdv1beta2.EtcdRestoreList{} },
			AddToScheme: etcdv1beta2.AddToScheme, Builder: "etcdbackup", Sample: "etcd/etcd_v1beta2_etcdrestore.yaml",
			Stateful: true,
		},
	}
}

// AddToScheme registers the API group of every kind with s.
func AddToScheme(s *runtime.Scheme) error {
	for _, k := range All() {
		if err := k.AddToScheme(s); err != nil {
			return err
		}
	}
	return nil
}

// Of returns the kind of obj, a resource of one of the kinds, and whether
// it is one.
func Of(obj runtime.Object) (Kind, bool) {
	for _, k := range All() {
		if sameType(k.New(), obj) {
			return k, true
		}
	}
	return Kind{}, false
}

func sameType(a, b runtime.Object) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }
