package etcd

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// The planner reads when a member pod's claim was made: a claim made
// before its member was added holds another member's data.
func TestEtcdMemberPodSaysWhenItsClaimWasMade(t *testing.T) {
	ctx := context.Background()
	k8s := startAPIServer(t)
	ns := metav1.NamespaceDefault
	labels := resources.Labels(etcdcluster.Selector("example"))
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: etcdcluster.ClaimName("example-1"), Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if err := k8s.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"example-0", "example-1"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: etcdcluster.ContainerName, Image: "etcd"}}},
		}
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example"}}
	obs, _, _, err := (&etcdOps{client: k8s, api: k8s}).observeMembers(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if got := obs.Pods["example-1"]; got.ClaimUID != string(claim.UID) || !got.ClaimCreated.Equal(claim.CreationTimestamp.Time) {
		t.Errorf("pod example-1 on claim %s made at %s, want %s made at %s", got.ClaimUID, got.ClaimCreated, claim.UID, claim.CreationTimestamp)
	}
	if got := obs.Pods["example-0"]; got.ClaimUID != "" || !got.ClaimCreated.IsZero() {
		t.Errorf("pod example-0 without a claim: on %q made at %s", got.ClaimUID, got.ClaimCreated)
	}
}
