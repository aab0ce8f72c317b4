package redisenterprisecluster

import (
	"testing"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/placementtest"
)

func TestStatefulSetPlacesAndSpreadsMembers(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	for _, c := range placementtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			spec := redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, Placement: c.Placement}
			children, err := Build(owner, &spec, Input{})
			if err != nil {
				t.Fatal(err)
			}
			placementtest.Check(t, placementtest.PodSpec(t, children.StatefulSet.Spec.Template.Spec), Selector(owner.Name), c, placementtest.StatefulSet)
		})
	}
}
