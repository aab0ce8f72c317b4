package preview

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/app-operator/app-operator/api/podsecurity"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// TestSamplePodsPassPodSecurity runs the upstream Pod Security evaluator on
// the pod template of every Deployment the samples produce: at level
// baseline with the default profile, at level restricted with Restricted.
func TestSamplePodsPassPodSecurity(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		profile podsecurity.Profile
		level   api.Level
		// violates: the pods must fail this level (proves the check bites).
		violates bool
	}{
		{podsecurity.Baseline, api.LevelBaseline, false},
		{podsecurity.Restricted, api.LevelRestricted, false},
		{podsecurity.Baseline, api.LevelRestricted, true},
	} {
		for _, sample := range samples {
			if filepath.Base(sample) == "kustomization.yaml" {
				continue
			}
			t.Run(string(tc.profile)+"@"+string(tc.level)+"/"+filepath.Base(sample), func(t *testing.T) {
				in, err := os.ReadFile(sample)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				opts := controller.Options{Defaults: resources.Defaults{SecurityProfile: tc.profile}}
				if err := Render(&out, bytes.NewReader(in), opts); err != nil {
					t.Fatal(err)
				}
				deployments := 0
				for _, doc := range strings.Split(out.String(), "\n---\n") {
					// A RedisEnterpriseCluster's StatefulSet has no profile:
					// its pods pass the restricted level whatever the default.
					d := &appsv1.Deployment{}
					if err := utilyaml.Unmarshal([]byte(doc), d); err != nil {
						t.Fatal(err)
					}
					if d.Kind != "Deployment" && d.Kind != "StatefulSet" {
						continue
					}
					deployments++
					// A RedisEnterpriseCluster's console has no profile either.
					violates := tc.violates && d.Kind == "Deployment" && d.Labels[resources.LabelName] != redisenterprisecluster.ConsoleKindName
					lv := api.LevelVersion{Level: tc.level, Version: api.LatestVersion()}
					var violations []string
					for _, r := range evaluator.EvaluatePod(lv, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec) {
						if !r.Allowed {
							violations = append(violations, r.ForbiddenReason+": "+r.ForbiddenDetail)
						}
					}
					if violates != (len(violations) > 0) {
						t.Errorf("%s %s at level %s: violations %v, want violations: %v", d.Kind, d.Name, tc.level, violations, violates)
					}
				}
				if deployments == 0 {
					t.Fatalf("%s produced no Deployment or StatefulSet", sample)
				}
			})
		}
	}
}

// TestOwnSecurityContextReplacesTheProfile: a user's container security
// context wins over the profile, so an image that needs root can still run
// in a namespace that allows it.
func TestOwnSecurityContextReplacesTheProfile(t *testing.T) {
	in := `apiVersion: app.example.com/v1
kind: AppService
metadata:
  name: web
spec:
  size: 1
  image: nginx
  securityProfile: Restricted
  securityContext:
    runAsUser: 0
`
	var out bytes.Buffer
	if err := Render(&out, strings.NewReader(in), controller.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "runAsUser: 0") || strings.Contains(out.String(), "readOnlyRootFilesystem") {
		t.Errorf("the container security context is not the user's:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "runAsNonRoot: true") {
		t.Errorf("the pod-level context of the Restricted profile is gone:\n%s", out.String())
	}
}
