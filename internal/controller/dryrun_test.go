package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redislabsv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/kinds"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/fuzzspec"
	"github.com/app-operator/app-operator/test/testenv"
)

// dryRunAccepted counts the built children the API server accepted in a
// server-side dry run.
var dryRunAccepted = &testenv.Tally{Format: "built children accepted by dry-run %d/%d"}

const (
	// dryRunSeed fixes the pseudo-random sample: every run checks the same inputs.
	dryRunSeed = 20240501
	// dryRunSample is how many pseudo-random inputs each kind gets, on top
	// of its seed corpus.
	dryRunSample = 50
)

// sampleInput is one input of the dry run: a resource made from fuzz
// values, and the operator options to build it with.
type sampleInput struct {
	name string
	obj  client.Object
	opts controller.Options
}

// TestBuiltChildrenPassDryRun feeds the inputs of the builders' fuzz
// targets (each seed corpus, and a fixed pseudo-random sample) through the
// real API server. An input whose resource the API server refuses is
// skipped: the operator never sees it. For every other one, each child the
// operator would apply (controller.Build) is server-side applied with
// dryRun=All under the kind's field owner, and must be accepted; so must
// the namespace's ResourceQuota for every admitted MicroServiceDeploy, and
// the PriorityClass it is scoped to.
//
// MyWeb's nodePortNumber and an AppService's nodePort are drawn from the
// cluster's node port range: the schema cannot know the range, and the
// operator reports a port outside it with reason ApplyRejected (see
// TestMyWebAdmission).
func TestBuiltChildrenPassDryRun(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	inputs := dryRunInputs(t, ns)

	admitted, gaps := map[string]int{}, map[string]int{}
	unsupported := 0
	var quotaSpecs []*customv1.MicroServiceDeploySpec
	for _, in := range inputs {
		kind := in.obj.GetObjectKind().GroupVersionKind().Kind
		// The operator builds from the stored resource, defaults applied:
		// the dry-run create returns it.
		if err := k8s.Create(ctx, in.obj, client.DryRunAll); err != nil {
			continue
		}
		admitted[kind]++
		if gap := knownGap(in.obj); gap != "" {
			gaps[gap]++
			continue
		}
		children, err := controller.Build(in.obj, in.opts)
		if f, ok := errors.AsType[*conditions.Failure](err); ok && f.Reason == etcdv1beta2.ReasonVersionUnsupported {
			// The operator builds nothing for a version below 3.4, and
			// says so: the same spec at a version it manages is checked.
			e := in.obj.(*etcdv1beta2.EtcdCluster).DeepCopy()
			e.Spec.Version = "3.6.16"
			children, err = controller.Build(e, in.opts)
			unsupported++
		}
		if err != nil {
			t.Errorf("%s: build: %v", in.name, err)
			continue
		}
		for _, child := range children {
			err := k8s.Apply(ctx, child, client.FieldOwner(engine.FieldOwner(strings.ToLower(kind))), client.ForceOwnership, client.DryRunAll)
			if controller.IsNodePortTaken(err) {
				// Valid, but a Service of a test running alongside holds
				// the node port drawn: the operator reports that as
				// NodePortAllocated (TestAppServiceNodePortTakenReportsAndKeepsChildren).
				t.Logf("%s: %s: %v", in.name, describe(child), err)
				continue
			}
			dryRunAccepted.Add(err == nil)
			if err != nil {
				t.Errorf("%s: %s refused: %v\nspec: %s\nchild: %s", in.name, describe(child), err, jsonOf(in.obj), jsonOf(child))
			}
		}
		if m, ok := in.obj.(*customv1.MicroServiceDeploy); ok {
			quotaSpecs = append(quotaSpecs, &m.Spec)
		}
	}
	// The quota of every admitted instance at once (the largest sums), and
	// the PriorityClass it is scoped to.
	if len(quotaSpecs) > 0 {
		for _, child := range []runtime.ApplyConfiguration{microservicedeploy.Quota(ns, quotaSpecs, nil), microservicedeploy.PriorityClass()} {
			err := k8s.Apply(ctx, child, client.FieldOwner(engine.FieldOwner("namespacequota")), client.ForceOwnership, client.DryRunAll)
			dryRunAccepted.Add(err == nil)
			if err != nil {
				t.Errorf("%s for %d instances refused: %v\n%s", describe(child), len(quotaSpecs), err, jsonOf(child))
			}
		}
	}

	names := make([]string, 0, len(admitted))
	for k := range admitted {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%s: %d inputs admitted", k, admitted[k])
	}
	for gap, n := range gaps {
		t.Logf("%d admitted inputs left out for a known gap: %s", n, gap)
	}
	t.Logf("%d EtcdCluster inputs below etcd 3.4 (refused, VersionUnsupported) checked at 3.6.16", unsupported)
	// A sample the schema mostly refuses would check next to nothing.
	for _, k := range kinds.All() {
		if n := admitted[k.GVK.Kind]; n < dryRunSample/4 {
			t.Errorf("only %d %s inputs admitted: the sample no longer exercises the builder", n, k.GVK.Kind)
		}
	}
}

// envVarName is what the API server accepts as an environment variable name.
var envVarName = regexp.MustCompile(`^[ -<>-~]+$`)

// knownGap names the gap in the schema that obj falls into, if any: input
// the API server admits although a child built from it is refused. The
// operator reports such a resource Ready=False with reason ApplyRejected
// and the server's message. These gaps stay because the schema cannot
// close them: a CEL rule over the strings of core/v1 EnvVar, or over the
// values of a map[string]string, has no length bound to estimate its cost
// with, and the API server refuses the CRD (its estimated cost exceeds the
// budget many times over).
//
// A RedisEnterpriseCluster's requests and limits (its nodes', its
// console's) are compared only when
// the cluster is reconciled: the operator reports a request above its
// limit (or a value that is no quantity) with reason InvalidSpec, and the
// builder refuses it. So is spec.hibernate with persistence present but
// off: spec.persistentSpec.enabled is a bool or a string, which a CEL rule
// cannot read; the operator reports it InvalidSpec, naming the field.
func knownGap(obj client.Object) string {
	var spec *appv1.AppServiceSpec
	switch o := obj.(type) {
	case *appv1.AppService:
		spec = &o.Spec
	case *appv1.WebService:
		spec = &o.Spec
	case *redislabsv1alpha1.RedisEnterpriseCluster:
		if _, err := redisenterprisecluster.Resources(o.Spec.RedisEnterpriseNodeResources); err != nil {
			return "spec.redisEnterpriseNodeResources: a request above its limit, or no quantity, is refused on reconcile (InvalidSpec)"
		}
		if _, err := redisenterprisecluster.ConsoleResources(&o.Spec); err != nil {
			return "spec.console.resources: a request above its limit, or no quantity, is refused on reconcile (InvalidSpec)"
		}
		if o.Spec.Hibernate && !redisenterprisecluster.Persistent(&o.Spec) {
			return "spec.hibernate without spec.persistentSpec.enabled true is refused on reconcile (InvalidSpec): admission cannot read a bool-or-string"
		}
		return ""
	default:
		return ""
	}
	for _, e := range spec.Envs {
		if !envVarName.MatchString(e.Name) {
			return "spec.envs[].name must be printable ASCII without '='"
		}
	}
	for _, v := range spec.PodLabels {
		if len(validation.IsValidLabelValue(v)) > 0 {
			return "spec.podLabels values must be label values (their length is checked, not their characters)"
		}
	}
	return ""
}

// dryRunInputs returns each kind's seed corpus and pseudo-random sample as
// resources in namespace ns, made as the fuzz targets make them
// (fuzzspec.Decode and fuzzspec.Fill).
func dryRunInputs(t *testing.T, ns string) []sampleInput {
	t.Helper()
	var out []sampleInput
	add := func(name string, obj client.Object, opts controller.Options) {
		out = append(out, sampleInput{name: fmt.Sprintf("%s %s", obj.GetObjectKind().GroupVersionKind().Kind, name), obj: obj, opts: opts})
	}
	msdOptions := func(expose uint8) controller.Options {
		base, class, auth := fuzzspec.Exposure(expose)
		return controller.Options{MicroServiceDeploy: microservicedeploy.Options{BaseDomain: base, IngressClassName: class, AuthURL: auth}}
	}

	// Each entry's first argument is the input the target fills its
	// resource from; the MicroServiceDeploy target's second selects the
	// operator's options.
	corpus := func(k kinds.Kind) {
		entries, err := fuzzspec.ReadCorpus(filepath.Join(repoRoot, "internal", "resources", k.Builder, "testdata", "fuzz", "FuzzBuild"))
		must(t, err)
		if len(entries) == 0 {
			t.Fatalf("no seed corpus for %s", k.Builder)
		}
		for name, args := range entries {
			obj := k.New()
			fuzzspec.Decode(args[0].([]byte), ns, obj)
			opts := controller.Options{}
			if _, ok := obj.(*customv1.MicroServiceDeploy); ok {
				opts = msdOptions(args[1].(uint8))
			}
			add("corpus "+name, obj, opts)
		}
	}
	for _, k := range kinds.All() {
		corpus(k)
	}

	f := fuzzspec.NewSeededFiller(dryRunSeed)
	for i := range dryRunSample {
		name := fmt.Sprintf("sample %d", i)
		for _, k := range kinds.All() {
			obj := k.New()
			fuzzspec.Fill(f, ns, obj)
			opts := controller.Options{}
			if _, ok := obj.(*customv1.MicroServiceDeploy); ok {
				var expose uint8
				f.Fill(&expose)
				opts = msdOptions(expose)
			}
			add(name, obj, opts)
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// describe names a child: its kind and name.
func describe(ac runtime.ApplyConfiguration) string {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(jsonOf(ac)), &meta)
	return meta.Kind + " " + meta.Metadata.Name
}
