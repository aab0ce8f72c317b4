package redisenterprisecluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

func TestQuantity(t *testing.T) {
	tests := []struct {
		in      intstr.IntOrString
		want    string
		wantErr bool
	}{
		{intstr.FromString("4 Gi"), "4Gi", false},
		{intstr.FromString("400m"), "400m", false},
		{intstr.FromString(" 1.5 Gi "), "1536Mi", false},
		{intstr.FromInt32(2), "2", false},
		{intstr.FromString("-4Gi"), "", true},
		{intstr.FromString("4 GB of RAM"), "", true},
	}
	for _, tt := range tests {
		q, err := Quantity(redisv1alpha1.Quantity{IntOrString: tt.in})
		if (err != nil) != tt.wantErr || (err == nil && q.String() != tt.want) {
			t.Errorf("Quantity(%v) = %s, %v; want %s (error %v)", tt.in, q.String(), err, tt.want, tt.wantErr)
		}
	}
}

func TestRolesNeverBootAPrimary(t *testing.T) {
	replicaOf := func(pod string) string { return "replicaof " + pod + ".r-nodes 6379\n" }
	none := "# Boots following no primary, refusing writes, until the operator promotes a node.\nreplicaof 127.0.0.1 1\n"
	tests := []struct {
		name     string
		recorded string
		want     map[string]string
	}{
		{"should make every node boot following no primary before one is recorded", "", map[string]string{
			"r-0.conf": none, "r-1.conf": none, "r-2.conf": none}},
		{"should make the recorded primary boot following no primary and the others its replicas", "r-2", map[string]string{
			"r-0.conf": replicaOf("r-2"), "r-1.conf": replicaOf("r-2"), "r-2.conf": none}},
		{"should keep the file of a recorded primary beyond the nodes wanted", "r-4", map[string]string{
			"r-0.conf": replicaOf("r-4"), "r-1.conf": replicaOf("r-4"), "r-2.conf": replicaOf("r-4"), "r-4.conf": none}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Roles("r", 3, tt.recorded)); diff != "" {
				t.Errorf("Roles (-want +got):\n%s", diff)
			}
		})
	}
	if !FollowsNoPrimary("127.0.0.1") || FollowsNoPrimary("r-0.r-nodes") {
		t.Error("FollowsNoPrimary does not tell the placeholder from a node")
	}
}

func TestFlagReadsBoolsAndStrings(t *testing.T) {
	for in, want := range map[string]redisv1alpha1.Flag{
		`true`: {Value: true}, `false`: {}, `"true"`: {Value: true, AsString: true}, `"false"`: {AsString: true},
	} {
		var f redisv1alpha1.Flag
		if err := json.Unmarshal([]byte(in), &f); err != nil || f != want {
			t.Errorf("%s: %+v, %v; want %+v", in, f, err, want)
		}
		if out, _ := json.Marshal(f); string(out) != in {
			t.Errorf("%s written back as %s", in, out)
		}
	}
	for _, in := range []string{`"yes"`, `1`, `null1`} {
		var f redisv1alpha1.Flag
		if err := json.Unmarshal([]byte(in), &f); err == nil {
			t.Errorf("%s: accepted as %+v", in, f)
		}
	}
}

// Scaled in below the primary's ordinal, the StatefulSet keeps the
// primary's pod, and every pod below it, each with its role file, until
// the primary is handed over to a node that stays.
func TestBuildKeepsThePrimaryBeyondTheNodesWanted(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	spec := &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}
	for _, tt := range []struct {
		primary string
		want    int32
	}{{"", 3}, {"r-1", 3}, {"r-3", 4}, {"r-4", 5}, {"other-4", 3}, {"r-99", 3}} {
		c, err := Build(owner, spec, Input{Primary: tt.primary})
		if err != nil {
			t.Fatal(err)
		}
		if got := *c.StatefulSet.Spec.Replicas; got != tt.want {
			t.Errorf("primary %q: %d replicas, want %d", tt.primary, got, tt.want)
		}
		for i := range int(tt.want) {
			if _, ok := c.ConfigMap.Data[RoleFile(PodName("r", i))]; !ok {
				t.Errorf("primary %q: no role file for r-%d", tt.primary, i)
			}
		}
	}
}

// The `<name>-ui` Service, of any type, selects the console's pod, and
// never a Redis node, and has only the console's ports: a LoadBalancer
// there must not publish the data set.
func TestTheUIServiceServesTheConsoleAndNoData(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	for _, typ := range []corev1.ServiceType{"", corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer} {
		c, err := Build(owner, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, UIServiceType: typ}, Input{})
		if err != nil {
			t.Fatal(err)
		}
		spec := c.UIService.Spec
		want := typ
		if want == "" {
			want = corev1.ServiceTypeClusterIP
		}
		if *spec.Type != want {
			t.Errorf("uiServiceType %q: type %s, want %s", typ, *spec.Type, want)
		}
		if diff := cmp.Diff(c.Console.Deployment.Spec.Template.Labels, resources.Merge(c.Console.Deployment.Spec.Template.Labels, spec.Selector)); diff != "" || len(spec.Selector) == 0 {
			t.Errorf("uiServiceType %q: selector %v does not select the console's pods %v", typ, spec.Selector, c.Console.Deployment.Spec.Template.Labels)
		}
		if nodes := c.StatefulSet.Spec.Template.Labels; nodes[resources.LabelName] == spec.Selector[resources.LabelName] {
			t.Errorf("uiServiceType %q: selector %v selects the Redis nodes %v", typ, spec.Selector, nodes)
		}
		ports := make([]string, 0, len(spec.Ports))
		for _, p := range spec.Ports {
			ports = append(ports, fmt.Sprintf("%s %d->%s", *p.Name, *p.Port, p.TargetPort.String()))
		}
		if diff := cmp.Diff([]string{"ui 8443->ui", "api 9443->api"}, ports); diff != "" {
			t.Errorf("uiServiceType %q: ports (-want +got):\n%s", typ, diff)
		}
	}
}

// The eviction API refuses a pod that two budgets select, and a drain must
// never take the primary: every pod is selected by exactly one budget, the
// primary's holding it, the replicas' letting one go.
func TestBudgetsSelectEachPodOnceAndHoldThePrimary(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	for _, nodes := range []int32{3, 5} {
		c, err := Build(owner, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: nodes}, Input{})
		if err != nil {
			t.Fatal(err)
		}
		selector := func(b *policyv1ac.PodDisruptionBudgetApplyConfiguration) labels.Selector {
			raw, err := json.Marshal(b.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			var s metav1.LabelSelector
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			sel, err := metav1.LabelSelectorAsSelector(&s)
			if err != nil {
				t.Fatal(err)
			}
			return sel
		}
		replicas, primary := selector(c.ReplicasBudget), selector(c.PrimaryBudget)
		for role, want := range map[string]string{redisv1alpha1.RolePrimary: "primary", redisv1alpha1.RoleReplica: "replicas", "": "replicas"} {
			pod := resources.Merge(Selector("r"), map[string]string{})
			if role != "" {
				pod[RoleLabel] = role
			}
			got := []string{}
			if replicas.Matches(labels.Set(pod)) {
				got = append(got, "replicas")
			}
			if primary.Matches(labels.Set(pod)) {
				got = append(got, "primary")
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("%d nodes: a pod labelled %q is selected by %v, want only the %s budget", nodes, role, got, want)
			}
		}
		if got := c.ReplicasBudget.Spec.MinAvailable.IntValue(); got != int(nodes)-2 {
			t.Errorf("%d nodes: the replicas' budget keeps %d available, want %d", nodes, got, nodes-2)
		}
		if got := c.PrimaryBudget.Spec.MinAvailable.IntValue(); got != 1 || *c.PrimaryBudget.Name != PrimaryBudgetName("r") {
			t.Errorf("%d nodes: the primary's budget %s keeps %d available, want 1", nodes, *c.PrimaryBudget.Name, got)
		}
	}
}

// A cluster of spec.restore has the restoring init container, from the
// snapshot tool's image, in every node's template (the tool restores only
// in the first node); every cluster has, after it, the container that
// writes the password's settings Redis includes and the lineage container,
// which reads how far the data folder got before Redis starts.
func TestRestoreAddsTheInitContainerToEveryNodeTemplate(t *testing.T) {
	const auth = "op:2 auth --to=/etc/redis-auth/auth.conf --user=demo@redislabs.com"
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "u"}
	restore := &redisv1alpha1.RestoreSource{Backup: "old", BackupStorage: redisv1alpha1.BackupStorage{
		PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}}
	for _, tt := range []struct {
		name    string
		restore *redisv1alpha1.RestoreSource
		want    []string
	}{
		{"no restore", nil, []string{auth, "op:2 lineage --data-dir=/data"}},
		{"a restore", restore, []string{"op:2 restore --only-pod=r-0 --data-dir=/data --from=/backup/old", auth, "op:2 lineage --data-dir=/data"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Build(owner, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, Restore: tt.restore}, Input{SnapshotImage: "op:2"})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, 0, len(c.StatefulSet.Spec.Template.Spec.InitContainers))
			for _, ic := range c.StatefulSet.Spec.Template.Spec.InitContainers {
				line := *ic.Image
				for _, a := range ic.Args {
					line += " " + a
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("init containers (-want +got):\n%s", diff)
			}
		})
	}
}

// A cluster of spec.restore says in its ConfigMap, once it has a primary,
// that it was restored, and its restore container reads that key: a node
// that starts empty later does not load the old backup again.
func TestARestoredClusterSaysSoOnceItHasAPrimary(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "u"}
	spec := &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, Restore: &redisv1alpha1.RestoreSource{Backup: "old", BackupStorage: redisv1alpha1.BackupStorage{
		PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}}}
	for _, tt := range []struct {
		primary string
		want    bool
	}{{"", false}, {"r-1", true}} {
		c, err := Build(owner, spec, Input{SnapshotImage: "op:2", Primary: tt.primary})
		if err != nil {
			t.Fatal(err)
		}
		if _, got := c.ConfigMap.Data[redisbackup.RestoredKey]; got != tt.want {
			t.Errorf("primary %q: restored key present %v, want %v", tt.primary, got, tt.want)
		}
		restore := c.StatefulSet.Spec.Template.Spec.InitContainers[0]
		reads := false
		for _, e := range restore.Env {
			if ref := e.ValueFrom; *e.Name == redisbackup.RestoredEnv && ref != nil && ref.ConfigMapKeyRef != nil {
				reads = *ref.ConfigMapKeyRef.Name == ConfigMapName("r") && *ref.ConfigMapKeyRef.Key == redisbackup.RestoredKey
			}
		}
		if !reads {
			t.Errorf("the restore container does not read %s from the ConfigMap", redisbackup.RestoredKey)
		}
	}
}

// No password reaches redis-server's command line or its environment but
// REDISCLI_AUTH, for a shell in the pod: the auth init container has it,
// from the Secret, and writes what Redis includes, on a volume of the
// pod's memory.
func TestThePasswordIsOnNoCommandLine(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "u"}
	c, err := Build(owner, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}, Input{SnapshotImage: "op:2"})
	if err != nil {
		t.Fatal(err)
	}
	pod := c.StatefulSet.Spec.Template.Spec
	for _, ct := range append(slices.Clone(pod.Containers), pod.InitContainers...) {
		for _, a := range append(slices.Clone(ct.Command), ct.Args...) {
			if strings.Contains(strings.ToLower(a), "pass") || strings.Contains(a, "$(REDIS") {
				t.Errorf("container %s has argument %q", *ct.Name, a)
			}
		}
		for _, e := range ct.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			if want := map[string]string{"redis": "REDISCLI_AUTH", "auth": "REDIS_PASSWORD"}[*ct.Name]; *e.Name != want {
				t.Errorf("container %s has the Secret's %s as %s", *ct.Name, *e.ValueFrom.SecretKeyRef.Key, *e.Name)
			}
		}
	}
	var medium corev1.StorageMedium
	for _, v := range pod.Volumes {
		if *v.Name == "auth" && v.EmptyDir != nil {
			medium = *v.EmptyDir.Medium
		}
	}
	if medium != corev1.StorageMediumMemory {
		t.Errorf("the auth volume's medium is %q, want Memory", medium)
	}
}
