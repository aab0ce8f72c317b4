// Package v1beta2 contains the etcd.database.coreos.com/v1beta2 API:
// EtcdCluster, an etcd cluster whose members the operator adds, promotes,
// replaces, removes and upgrades one at a time through etcd's own API;
// EtcdBackup, its snapshots kept in S3 or on a claim; and EtcdRestore, a
// new cluster started from one.
// +kubebuilder:object:generate=true
// +groupName=etcd.database.coreos.com
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "etcd.database.coreos.com", Version: "v1beta2"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this API, and the options types
// every API version carries, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &EtcdCluster{}, &EtcdClusterList{}, &EtcdBackup{}, &EtcdBackupList{}, &EtcdRestore{}, &EtcdRestoreList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
