package microservicedeploy

import (
	"testing"

	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/placementtest"
)

func TestDeploymentPlacesAndSpreadsPods(t *testing.T) {
	for _, c := range placementtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			spec := sample()
			spec.Placement = c.Placement
			d := Build(owner("svc"), &spec, Options{}, resources.Defaults{}, "").Deployment
			placementtest.Check(t, placementtest.PodSpec(t, d.Spec.Template.Spec), Selector("svc"), c, placementtest.Deployment)
		})
	}
}
