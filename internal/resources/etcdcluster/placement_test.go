package etcdcluster

import (
	"testing"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/placementtest"
)

func TestStatefulSetPlacesAndSpreadsMembers(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
	for _, c := range placementtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			s := spec(3, "3.6.16")
			s.Pod = &etcdv1beta2.PodPolicy{Placement: c.Placement}
			sts := Build(owner, s, FromStatus(owner.Name, nil)).StatefulSet
			placementtest.Check(t, placementtest.PodSpec(t, sts.Spec.Template.Spec), Selector(owner.Name), c, placementtest.StatefulSet)
		})
	}
	t.Run("without spec.pod, the default", func(t *testing.T) {
		sts := Build(owner, spec(3, "3.6.16"), FromStatus(owner.Name, nil)).StatefulSet
		placementtest.Check(t, placementtest.PodSpec(t, sts.Spec.Template.Spec), Selector(owner.Name), placementtest.Cases()[0], placementtest.StatefulSet)
	})
}
