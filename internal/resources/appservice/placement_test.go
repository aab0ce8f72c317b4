package appservice

import (
	"testing"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/placementtest"
)

func TestDeploymentPlacesAndSpreadsPods(t *testing.T) {
	for _, c := range placementtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			spec := appv1.AppServiceSpec{Image: "nginx", Placement: c.Placement}
			d := Build(owner, &spec, resources.Defaults{}).Deployment
			placementtest.Check(t, placementtest.PodSpec(t, d.Spec.Template.Spec), Selector(owner), c, placementtest.Deployment)
		})
	}
}
