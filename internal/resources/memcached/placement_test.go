package memcached

import (
	"testing"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/placementtest"
)

// The preferred spread keeps the constraint Memcached had before
// spec.spread, without matchLabelKeys, so that an upgrade of the operator
// does not restart the servers.
func TestDeploymentPlacesAndSpreadsPods(t *testing.T) {
	for _, c := range placementtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			spec := cachev1alpha1.MemcachedSpec{Size: 3, Placement: c.Placement}
			d := Build(owner, &spec, resources.Defaults{}).Deployment
			placementtest.Check(t, placementtest.PodSpec(t, d.Spec.Template.Spec), Selector(owner.Name), c, placementtest.DeploymentRevisionKeyWhenRequired)
		})
	}
}
