package etcdcluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// TestTheClusterTokenIsFormedOnceAndKept builds a cluster's children pass
// after pass: a cluster formed now gets a token of its own uid, in its
// start-up files and its restore, and a running cluster, whichever token it
// was formed with, gets exactly the objects it has, so no member is
// restarted or changed.
func TestTheClusterTokenIsFormedOnceAndKept(t *testing.T) {
	owner := testOwner()
	restore := &Restore{Image: "operator:1", Source: etcdv1beta2.SnapshotSource{BackupStorageType: etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
		BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "etcd/example"}}}}
	seed := []etcdv1beta2.EtcdMember{{Name: "example-0"}}
	three := []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-1", ID: "2", ClaimUID: "c1"}, {Name: "example-2", ID: "3", ClaimUID: "c2"}}
	tests := []struct {
		name    string
		members []etcdv1beta2.EtcdMember
		restore *Restore
		// token is what the live ConfigMap carries (empty: there is none,
		// or another EtcdCluster's); want the token the build gives.
		token, want string
	}{
		{"a cluster formed now", seed, nil, "", "ns/example/uid"},
		{"a cluster restored now", seed, restore, "", "ns/example/uid"},
		{"a cluster formed before each had its own token", three, nil, "ns/example", "ns/example"},
		{"a cluster formed before, restored and not yet started", seed, restore, "ns/example", "ns/example"},
		{"a cluster formed with its own token", three, nil, "ns/example/uid", "ns/example/uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Membership{Members: tt.members, Replicas: Replicas(owner.Name, tt.members), Token: tt.token, Restore: tt.restore}
			first := Build(owner, spec(3, "3.6.16"), m)
			for key, file := range first.ConfigMap.Data {
				if !strings.Contains(file, "\ninitial-cluster-token: "+tt.want+"\n") {
					t.Errorf("start-up file %s:\n%s\nwant the token %s", key, file, tt.want)
				}
			}
			if inits := first.StatefulSet.Spec.Template.Spec.InitContainers; tt.restore != nil &&
				(len(inits) != 1 || !slices.Contains(inits[0].Args, "--initial-cluster-token="+tt.want)) {
				t.Errorf("the restore's args %v, want the token %s", inits[0].Args, tt.want)
			}

			// The next pass reads the files the first applied.
			live := Live{Replicas: ptr.To(m.Replicas), Files: first.ConfigMap.Data, Token: TokenOf(first.ConfigMap.Data)}
			obs := Observed{Cluster: owner.Name, Recorded: tt.members}
			next := MembershipOf(obs, live)
			next.Restore = tt.restore
			again := Build(owner, spec(3, "3.6.16"), next)
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("the next pass changes the children (-first +next):\n%s", diff)
			}
		})
	}
}

// TestTokenOf reads the token of start-up files, the first by key.
func TestTokenOf(t *testing.T) {
	tests := []struct {
		files map[string]string
		want  string
	}{
		{nil, ""},
		{map[string]string{"a.yaml": "name: a\n"}, ""},
		{map[string]string{"b.yaml": "initial-cluster-token: ns/x/2\n", "a.yaml": "initial-cluster-token: ns/x/1\n"}, "ns/x/1"},
		{map[string]string{"a.yaml": "not: [yaml", "b.yaml": "initial-cluster-token: ns/x\n"}, "ns/x"},
	}
	for _, tt := range tests {
		if got := TokenOf(tt.files); got != tt.want {
			t.Errorf("TokenOf(%v) = %q, want %q", tt.files, got, tt.want)
		}
	}
}
