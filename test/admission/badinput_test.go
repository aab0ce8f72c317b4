package admission

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// badInputsRefused counts the bad inputs the API server refused as it should.
var badInputsRefused = &testenv.Tally{Format: "bad inputs refused %d/%d"}

// badInput is one invalid resource: a sample of config/samples with edits,
// sent as JSON (unstructured), so that it can hold what a typed client
// could not send: a string for a number, a missing required field.
type badInput struct {
	name   string
	sample string
	edits  []edit
	// field is the path the API server's message must name.
	field string
	// strict sends the request with fieldValidation=Strict, as kubectl does.
	strict bool
	// update creates the sample first, then sends the edits as an update.
	update bool
}

// edit changes the value at a path such as spec.ports[0].port; a nil value
// removes the field.
type edit struct {
	path  string
	value any
}

func set(path string, value any) edit { return edit{path, value} }
func del(path string) edit            { return edit{path, nil} }

const (
	appSample   = "app_v1_appservice.yaml"
	webSample   = "app_v1_webservice.yaml"
	myWebSample = "operator_v1_myweb.yaml"
)

// badInputs lists, for every kind, inputs of each sort the API must refuse:
// wrong types, numbers out of range, values outside an enum, broken
// cross-field (CEL) rules, changes to immutable fields, missing required
// fields and unknown fields. The existing *_validation_test.go tables hold
// more cases of each kind, written against the typed API.
func badInputs() []badInput {
	ports := make([]any, 33)
	for i := range ports {
		ports[i] = map[string]any{"name": "p" + strconv.Itoa(i), "port": int64(1000 + i)}
	}
	return []badInput{
		// AppService
		{name: "AppService size of the wrong type", sample: appSample, edits: []edit{set("spec.size", "two")}, field: "spec.size"},
		{name: "AppService image of the wrong type", sample: appSample, edits: []edit{set("spec.image", int64(42))}, field: "spec.image"},
		{name: "AppService ports as an object", sample: appSample, edits: []edit{set("spec.ports", map[string]any{"port": int64(80)})}, field: "spec.ports"},
		{name: "AppService port as a string", sample: appSample, edits: []edit{set("spec.ports[0].port", "80")}, field: "spec.ports[0].port"},
		{name: "AppService pod label of the wrong type", sample: appSample, edits: []edit{set("spec.podLabels", map[string]any{"team": int64(1)})}, field: "spec.podLabels.team"},
		{name: "AppService env var as a string", sample: appSample, edits: []edit{set("spec.envs", []any{"MODE=x"})}, field: "spec.envs[0]"},
		{name: "AppService negative size", sample: appSample, edits: []edit{set("spec.size", int64(-1))}, field: "spec.size"},
		{name: "AppService port above 65535", sample: appSample, edits: []edit{set("spec.ports[0].port", int64(65536))}, field: "spec.ports[0].port"},
		{name: "AppService nodePort 0 written out", sample: appSample, edits: []edit{set("spec.ports[0].nodePort", int64(0))}, field: "spec.ports[0].nodePort"},
		{name: "AppService 33 ports", sample: appSample, edits: []edit{set("spec.ports", ports)}, field: "spec.ports"},
		{name: "AppService unknown serviceType", sample: appSample, edits: []edit{set("spec.serviceType", "ExternalName")}, field: "spec.serviceType"},
		{name: "AppService unknown protocol", sample: appSample, edits: []edit{set("spec.ports[0].protocol", "HTTP")}, field: "spec.ports[0].protocol"},
		{name: "AppService unknown securityProfile", sample: appSample, edits: []edit{set("spec.securityProfile", "Privileged")}, field: "spec.securityProfile"},
		{name: "AppService named targetPort", sample: appSample, edits: []edit{set("spec.ports[0].targetPort", "http")}, field: "spec.ports[].targetPort"},
		{name: "AppService nodePort on a ClusterIP Service", sample: appSample, edits: []edit{set("spec.serviceType", "ClusterIP")}, field: "spec.ports[].nodePort"},
		{name: "AppService without size", sample: appSample, edits: []edit{del("spec.size")}, field: "spec.size"},
		{name: "AppService without image", sample: appSample, edits: []edit{del("spec.image")}, field: "spec.image"},
		{name: "AppService port without a number", sample: appSample, edits: []edit{del("spec.ports[0].port")}, field: "spec.ports[0].port"},
		{name: "AppService without spec", sample: appSample, edits: []edit{del("spec")}, field: "spec"},
		{name: "AppService misspelt field", sample: appSample, edits: []edit{set("spec.sise", int64(2))}, field: "spec.sise", strict: true},
		{name: "AppService name that is no DNS label", sample: appSample, edits: []edit{set("metadata.name", "nginx.app")}, field: "metadata.name"},
		{name: "AppService pod label key with a space", sample: appSample, edits: []edit{set("spec.podLabels", map[string]any{"my team": "a"})}, field: "spec.podLabels"},
		{name: "AppService pod label value of 64 characters", sample: appSample, edits: []edit{set("spec.podLabels", map[string]any{"team": strings.Repeat("a", 64)})}, field: "spec.podLabels"},
		{name: "AppService 65 pod labels", sample: appSample, edits: []edit{set("spec.podLabels", manyLabels(65))}, field: "spec.podLabels"},
		{name: "AppService pod annotation key with a slash too many", sample: appSample, edits: []edit{set("spec.podAnnotations", map[string]any{"a/b/c": "x"})}, field: "spec.podAnnotations"},
		{name: "AppService memory request above its limit", sample: appSample, edits: []edit{set("spec.resources", map[string]any{
			"requests": map[string]any{"memory": "2Gi"}, "limits": map[string]any{"memory": "1Gi"}})}, field: "spec.resources"},
		{name: "AppService update to a negative size", sample: appSample, edits: []edit{set("spec.size", int64(-1))}, field: "spec.size", update: true},

		// WebService
		{name: "WebService size of the wrong type", sample: webSample, edits: []edit{set("spec.size", "2")}, field: "spec.size"},
		{name: "WebService port 0", sample: webSample, edits: []edit{set("spec.ports[0].port", int64(0))}, field: "spec.ports[0].port"},
		{name: "WebService unknown serviceType", sample: webSample, edits: []edit{set("spec.serviceType", "Headless")}, field: "spec.serviceType"},
		{name: "WebService two ports of one name", sample: webSample, edits: []edit{set("spec.ports", []any{
			map[string]any{"name": "web", "port": int64(80)}, map[string]any{"name": "web", "port": int64(81)}})}, field: "spec.ports[].name"},
		{name: "WebService without image", sample: webSample, edits: []edit{del("spec.image")}, field: "spec.image"},
		{name: "WebService update to an unknown protocol", sample: webSample, edits: []edit{set("spec.ports[0].protocol", "QUIC")}, field: "spec.ports[0].protocol", update: true},

		// Memcached
		{name: "Memcached size of the wrong type", sample: testenv.MemcachedSample, edits: []edit{set("spec.size", "3")}, field: "spec.size"},
		{name: "Memcached size above 256", sample: testenv.MemcachedSample, edits: []edit{set("spec.size", int64(257))}, field: "spec.size"},
		{name: "Memcached negative size", sample: testenv.MemcachedSample, edits: []edit{set("spec.size", int64(-1))}, field: "spec.size"},
		{name: "Memcached fractional size", sample: testenv.MemcachedSample, edits: []edit{set("spec.size", 1.5)}, field: "spec.size"},
		{name: "Memcached empty image", sample: testenv.MemcachedSample, edits: []edit{set("spec.image", "")}, field: "spec.image"},
		{name: "Memcached image with a space", sample: testenv.MemcachedSample, edits: []edit{set("spec.image", "memcached 1.6")}, field: "spec.image"},
		{name: "Memcached resources as a string", sample: testenv.MemcachedSample, edits: []edit{set("spec.resources", "small")}, field: "spec.resources"},
		{name: "Memcached memory limit that is no quantity", sample: testenv.MemcachedSample, edits: []edit{set("spec.resources", map[string]any{
			"limits": map[string]any{"memory": "lots"}})}, field: "spec.resources.limits.memory"},
		{name: "Memcached unknown securityProfile", sample: testenv.MemcachedSample, edits: []edit{set("spec.securityProfile", "restricted")}, field: "spec.securityProfile"},
		{name: "Memcached runAsUser of the wrong type", sample: testenv.MemcachedSample, edits: []edit{set("spec.podSecurityContext", map[string]any{"runAsUser": "root"})},
			field: "spec.podSecurityContext.runAsUser"},
		{name: "Memcached CPU request above its limit", sample: testenv.MemcachedSample, edits: []edit{set("spec.resources", map[string]any{
			"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "500m"}})}, field: "spec.resources"},
		{name: "Memcached without size", sample: testenv.MemcachedSample, edits: []edit{del("spec.size")}, field: "spec.size"},
		{name: "Memcached misspelt field", sample: testenv.MemcachedSample, edits: []edit{set("spec.replicas", int64(3))}, field: "spec.replicas", strict: true},
		{name: "Memcached name that is no DNS label", sample: testenv.MemcachedSample, edits: []edit{set("metadata.name", "cache.example")}, field: "metadata.name"},
		{name: "Memcached update to size 1000", sample: testenv.MemcachedSample, edits: []edit{set("spec.size", int64(1000))}, field: "spec.size", update: true},

		// MyWeb
		{name: "MyWeb node port as a string", sample: myWebSample, edits: []edit{set("spec.nodePortNumber", "30100")}, field: "spec.nodePortNumber"},
		{name: "MyWeb node port 0", sample: myWebSample, edits: []edit{set("spec.nodePortNumber", int64(0))}, field: "spec.nodePortNumber"},
		{name: "MyWeb node port 65536", sample: myWebSample, edits: []edit{set("spec.nodePortNumber", int64(65536))}, field: "spec.nodePortNumber"},
		{name: "MyWeb negative replicas", sample: myWebSample, edits: []edit{set("spec.replicas", int64(-1))}, field: "spec.replicas"},
		{name: "MyWeb fractional replicas", sample: myWebSample, edits: []edit{set("spec.replicas", 1.5)}, field: "spec.replicas"},
		{name: "MyWeb page as a list", sample: myWebSample, edits: []edit{set("spec.pageContentHtml", []any{"<p>a</p>"})}, field: "spec.pageContentHtml"},
		{name: "MyWeb empty image", sample: myWebSample, edits: []edit{set("spec.image", "")}, field: "spec.image"},
		{name: "MyWeb unknown securityProfile", sample: myWebSample, edits: []edit{set("spec.securityProfile", "None")}, field: "spec.securityProfile"},
		{name: "MyWeb page of 1000001 characters", sample: myWebSample, edits: []edit{set("spec.pageContentHtml", strings.Repeat("a", 1000001))}, field: "spec.pageContentHtml"},
		{name: "MyWeb page of more than 1000000 bytes", sample: myWebSample, edits: []edit{set("spec.pageContentHtml", strings.Repeat("預", 400000))}, field: "spec.pageContentHtml"},
		{name: "MyWeb without image", sample: myWebSample, edits: []edit{del("spec.image")}, field: "spec.image"},
		{name: "MyWeb without nodePortNumber", sample: myWebSample, edits: []edit{del("spec.nodePortNumber")}, field: "spec.nodePortNumber"},
		{name: "MyWeb without pageContentHtml", sample: myWebSample, edits: []edit{del("spec.pageContentHtml")}, field: "spec.pageContentHtml"},
		{name: "MyWeb misspelt field", sample: myWebSample, edits: []edit{set("spec.nodePort", int64(30100))}, field: "spec.nodePort", strict: true},
		{name: "MyWeb update to a negative node port", sample: myWebSample, edits: []edit{set("spec.nodePortNumber", int64(-1))}, field: "spec.nodePortNumber", update: true},

		// EtcdCluster
		{name: "EtcdCluster size 0", sample: testenv.EtcdSample, edits: []edit{set("spec.size", int64(0))}, field: "spec.size"},
		{name: "EtcdCluster size 10", sample: testenv.EtcdSample, edits: []edit{set("spec.size", int64(10))}, field: "spec.size"},
		{name: "EtcdCluster size as a string", sample: testenv.EtcdSample, edits: []edit{set("spec.size", "3")}, field: "spec.size"},
		{name: "EtcdCluster version with a v", sample: testenv.EtcdSample, edits: []edit{set("spec.version", "v3.2.13")}, field: "spec.version"},
		{name: "EtcdCluster version as a number", sample: testenv.EtcdSample, edits: []edit{set("spec.version", 3.2)}, field: "spec.version"},
		{name: "EtcdCluster without version", sample: testenv.EtcdSample, edits: []edit{del("spec.version")}, field: "spec.version"},
		{name: "EtcdCluster empty repository", sample: testenv.EtcdSample, edits: []edit{set("spec.repository", "")}, field: "spec.repository"},
		{name: "EtcdCluster misspelt field", sample: testenv.EtcdSample, edits: []edit{set("spec.members", int64(3))}, field: "spec.members", strict: true},
		{name: "EtcdCluster update skipping a minor version", sample: testenv.EtcdSample, edits: []edit{set("spec.version", "3.4.0")}, field: "spec.version", update: true},
		{name: "EtcdCluster update to an older version", sample: testenv.EtcdSample, edits: []edit{set("spec.version", "3.2.12")}, field: "spec.version", update: true},

		// MicroServiceDeploy
		{name: "MicroServiceDeploy msName with capitals", sample: testenv.MSDSample, edits: []edit{set("spec.msName", "Ms_Sample")}, field: "spec.msName"},
		{name: "MicroServiceDeploy replicas as a string", sample: testenv.MSDSample, edits: []edit{set("spec.replicas", "3")}, field: "spec.replicas"},
		{name: "MicroServiceDeploy autoscaling as a string", sample: testenv.MSDSample, edits: []edit{set("spec.autoscaling", "true")}, field: "spec.autoscaling"},
		{name: "MicroServiceDeploy needAuth as a number", sample: testenv.MSDSample, edits: []edit{set("spec.needAuth", int64(1))}, field: "spec.needAuth"},
		{name: "MicroServiceDeploy idle as a string", sample: testenv.MSDSample, edits: []edit{set("spec.idle", "no")}, field: "spec.idle"},
		{name: "MicroServiceDeploy version as a number", sample: testenv.MSDSample, edits: []edit{set("spec.version", 1.0)}, field: "spec.version"},
		{name: "MicroServiceDeploy 1001 replicas", sample: testenv.MSDSample, edits: []edit{set("spec.replicas", int64(1001))}, field: "spec.replicas"},
		{name: "MicroServiceDeploy port 70000", sample: testenv.MSDSample, edits: []edit{set("spec.port", int64(70000))}, field: "spec.port"},
		{name: "MicroServiceDeploy target CPU utilization 0", sample: testenv.MSDSample, edits: []edit{set("spec.autoscalingTargetCPUUtilization", int64(0))}, field: "spec.autoscalingTargetCPUUtilization"},
		{name: "MicroServiceDeploy config too large", sample: testenv.MSDSample, edits: []edit{set("spec.config", strings.Repeat("x", 262001))}, field: "spec.config"},
		{name: "MicroServiceDeploy version that is no label value", sample: testenv.MSDSample, edits: []edit{set("spec.version", "1.0 beta")}, field: "spec.version"},
		{name: "MicroServiceDeploy path with a slash", sample: testenv.MSDSample, edits: []edit{set("spec.path", "v1/api")}, field: "spec.path"},
		{name: "MicroServiceDeploy image with a leading blank", sample: testenv.MSDSample, edits: []edit{set("spec.image", " nginx")}, field: "spec.image"},
		{name: "MicroServiceDeploy creationTimestamp as a date", sample: testenv.MSDSample, edits: []edit{set("spec.creationTimestamp", "2018-08-29T12:45:18Z")}, field: "spec.creationTimestamp"},
		{name: "MicroServiceDeploy configSecretName that cannot name a Secret", sample: testenv.MSDSample, edits: []edit{set("spec.configSecretName", "Not_A_Name")}, field: "spec.configSecretName"},
		{name: "MicroServiceDeploy CPU limit that is no quantity", sample: testenv.MSDSample, edits: []edit{set("spec.resourceRequirements.limits.cpu", "lots")},
			field: "spec.resourceRequirements.limits.cpu"},
		{name: "MicroServiceDeploy unknown securityProfile", sample: testenv.MSDSample, edits: []edit{set("spec.securityProfile", "Admin")}, field: "spec.securityProfile"},
		{name: "MicroServiceDeploy fullName other than the name", sample: testenv.MSDSample, edits: []edit{set("spec.fullName", "other")}, field: "spec.fullName"},
		{name: "MicroServiceDeploy msName and path too long together", sample: testenv.MSDSample, edits: []edit{
			set("spec.msName", strings.Repeat("a", 40)), set("spec.path", strings.Repeat("b", 23))}, field: "spec.msName and spec.path"},
		{name: "MicroServiceDeploy zero replicas with autoscaling", sample: testenv.MSDSample, edits: []edit{set("spec.replicas", int64(0))}, field: "spec.replicas"},
		{name: "MicroServiceDeploy maximum below replicas", sample: testenv.MSDSample, edits: []edit{set("spec.autoscalingMaxReplicas", int64(2))}, field: "spec.autoscalingMaxReplicas"},
		{name: "MicroServiceDeploy autoscaling without a CPU figure", sample: testenv.MSDSample, edits: []edit{
			del("spec.resourceRequirements.requests.cpu"), del("spec.resourceRequirements.limits.cpu")}, field: "spec.resourceRequirements.requests.cpu"},
		{name: "MicroServiceDeploy request above its limit", sample: testenv.MSDSample, edits: []edit{set("spec.resourceRequirements.requests.memory", "8Gi")}, field: "spec.resourceRequirements.requests"},
		{name: "MicroServiceDeploy limit on a GPU", sample: testenv.MSDSample, edits: []edit{set("spec.resourceRequirements.limits.nvidia\\.com/gpu", "1")}, field: "spec.resourceRequirements.limits"},
		{name: "MicroServiceDeploy without msName", sample: testenv.MSDSample, edits: []edit{del("spec.msName")}, field: "spec.msName"},
		{name: "MicroServiceDeploy without version", sample: testenv.MSDSample, edits: []edit{del("spec.version")}, field: "spec.version"},
		{name: "MicroServiceDeploy without path", sample: testenv.MSDSample, edits: []edit{del("spec.path")}, field: "spec.path"},
		{name: "MicroServiceDeploy without image", sample: testenv.MSDSample, edits: []edit{del("spec.image")}, field: "spec.image"},
		{name: "MicroServiceDeploy misspelt field", sample: testenv.MSDSample, edits: []edit{set("spec.needauth", true)}, field: "spec.needauth", strict: true},
		{name: "MicroServiceDeploy update of msName", sample: testenv.MSDSample, edits: []edit{set("spec.msName", "other")}, field: "spec.msName", update: true},
		{name: "MicroServiceDeploy update of fullName", sample: testenv.MSDSample, edits: []edit{set("spec.fullName", "other")}, field: "spec.fullName", update: true},
		{name: "MicroServiceDeploy update to 1001 replicas", sample: testenv.MSDSample, edits: []edit{set("spec.replicas", int64(1001))}, field: "spec.replicas", update: true},

		// RedisEnterpriseCluster
		{name: "RedisEnterpriseCluster even nodes", sample: testenv.RedisSample, edits: []edit{set("spec.nodes", int64(4))}, field: "spec.nodes"},
		{name: "RedisEnterpriseCluster one node", sample: testenv.RedisSample, edits: []edit{set("spec.nodes", int64(1))}, field: "spec.nodes"},
		{name: "RedisEnterpriseCluster nodes as a string", sample: testenv.RedisSample, edits: []edit{set("spec.nodes", "three")}, field: "spec.nodes"},
		{name: "RedisEnterpriseCluster persistence enabled as a number", sample: testenv.RedisSample, edits: []edit{set("spec.persistentSpec.enabled", int64(1))}, field: "spec.persistentSpec.enabled"},
		{name: "RedisEnterpriseCluster negative memory limit", sample: testenv.RedisSample, edits: []edit{set("spec.redisEnterpriseNodeResources.limits.memory", "-4 Gi")},
			field: "spec.redisEnterpriseNodeResources.limits.memory"},
		{name: "RedisEnterpriseCluster negative cpu request", sample: testenv.RedisSample, edits: []edit{set("spec.redisEnterpriseNodeResources.requests.cpu", "-400m")},
			field: "spec.redisEnterpriseNodeResources.requests.cpu"},
		{name: "RedisEnterpriseCluster unknown ui Service type", sample: testenv.RedisSample, edits: []edit{set("spec.uiServiceType", "Ingress")}, field: "spec.uiServiceType"},
		{name: "RedisEnterpriseCluster misspelt field", sample: testenv.RedisSample, edits: []edit{set("spec.node", int64(3))}, field: "spec.node", strict: true},
		{name: "RedisEnterpriseCluster parameter the operator owns", sample: testenv.RedisSample, edits: []edit{set("spec.redisConfig.requirepass", "x")}, field: "spec.redisConfig.requirepass"},
		{name: "RedisEnterpriseCluster unknown parameter", sample: testenv.RedisSample, edits: []edit{set("spec.redisConfig.no-such-parameter", "1")}, field: "spec.redisConfig.no-such-parameter"},
	}
}

// TestBadInputIsRefused sends every bad input to the API server, as a
// create or, for the update cases, as an update of an existing resource,
// with dryRun=All. Each must be refused as invalid (422) or as a bad
// request (400, a misspelt field under strict field validation) with a
// message that names the field. The suite prints the count.
func TestBadInputIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	existing := map[string]*unstructured.Unstructured{}
	for _, tt := range badInputs() {
		passed := t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			testenv.LoadSample(t, tt.sample, obj, ns)
			opts := []client.CreateOption{client.DryRunAll}
			if tt.strict {
				opts = append(opts, client.FieldValidation("Strict"))
			}
			var err error
			if tt.update {
				live, ok := existing[tt.sample]
				if !ok {
					testenv.Create(t, k8s, obj)
					existing[tt.sample] = obj
					live = obj
				}
				obj = live.DeepCopy()
				applyEdits(t, obj, tt.edits)
				err = k8s.Update(ctx, obj, client.DryRunAll)
			} else {
				applyEdits(t, obj, tt.edits)
				err = k8s.Create(ctx, obj, opts...)
			}
			if err := refused(err, tt.field); err != nil {
				t.Fatal(err)
			}
		})
		badInputsRefused.Add(passed)
	}
}

// refused checks the API server's answer to a bad input: an Invalid (422)
// or BadRequest (400) error whose message names field.
func refused(err error, field string) error {
	switch {
	case err == nil:
		return fmt.Errorf("accepted, want a refusal naming %s", field)
	case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
		return fmt.Errorf("refused with %v (reason %s), want Invalid or BadRequest", err, apierrors.ReasonForError(err))
	case !strings.Contains(err.Error(), field):
		return fmt.Errorf("the message %q does not name %s", err, field)
	}
	return nil
}

// manyLabels returns n valid pod labels.
func manyLabels(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("label-%d", i)] = "x"
	}
	return m
}

var indexed = regexp.MustCompile(`^(.+)\[(\d+)\]$`)

// applyEdits makes the edits to obj. A path's elements are separated by
// dots (a backslash escapes one inside a key); name[i] is the i-th item
// of a list.
func applyEdits(t *testing.T, obj *unstructured.Unstructured, edits []edit) {
	t.Helper()
	for _, e := range edits {
		if err := setPath(obj.Object, splitPath(e.path), e.value); err != nil {
			t.Fatalf("edit %s: %v", e.path, err)
		}
	}
}

func splitPath(path string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			i++
			cur.WriteByte(path[i])
		case path[i] == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(path[i])
		}
	}
	return append(parts, cur.String())
}

func setPath(m map[string]any, parts []string, value any) error {
	key, index := parts[0], -1
	if match := indexed.FindStringSubmatch(key); match != nil {
		key = match[1]
		index, _ = strconv.Atoi(match[2])
	}
	last := len(parts) == 1
	if index < 0 {
		if last {
			if value == nil {
				delete(m, key)
			} else {
				m[key] = value
			}
			return nil
		}
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		return setPath(next, parts[1:], value)
	}
	list, ok := m[key].([]any)
	if !ok || index >= len(list) {
		return fmt.Errorf("%s has no item %d", key, index)
	}
	if last {
		list[index] = value
		return nil
	}
	item, ok := list[index].(map[string]any)
	if !ok {
		return fmt.Errorf("%s[%d] is not an object", key, index)
	}
	return setPath(item, parts[1:], value)
}
