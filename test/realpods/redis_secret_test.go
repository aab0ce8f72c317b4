package realpods

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/test/testenv"
)

// The password Secret deleted while the cluster runs and a client writes
// (persistence on): the operator makes no new password, which the running
// nodes would refuse, and says SecretMissing. The primary's pod is then
// deleted; its new pod cannot start without the Secret. The operator
// still fails over, with the password it last reached the nodes with, and
// writes go on through the new primary and the replica left. The Secret
// made again as the message says (its keys, the nodes' password and the
// cluster's labels), the pod starts and rejoins as a replica: Running,
// with no acknowledged write lost.
func TestRedisFaultPasswordSecretDeletedThenThePrimaryFails(t *testing.T) {
	c, _, r := startCell(t, "nosecret", true)
	ctx, ns, old := context.Background(), r.rec.Namespace, r.rec.Status.Primary
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.rec.Name}, secret); err != nil {
		t.Fatal(err)
	}
	w := r.startWriterWaiting("nosecret", 1, cellWritePause)
	waitWrites(t, w, 200)

	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, redisv1alpha1.ReasonSecretMissing, 2*time.Minute)
	t.Logf("Ready=False SecretMissing: %s", cond.Message)
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the password Secret was made again (%v): the running nodes would refuse a new password", err)
	}

	deleted := time.Now()
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: old}}); err != nil {
		t.Fatal(err)
	}
	var primary string
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		r.refresh()
		primary = r.rec.Status.Primary
		if primary == old {
			return false, "the primary is still " + old
		}
		info, err := r.replication(primary)
		return err == nil && info["role"] == "master", fmt.Sprintf("%s: role %s (%v)", primary, info["role"], err)
	})
	t.Logf("with the Secret missing, %s was promoted %v after %s's pod was deleted", primary, time.Since(deleted).Round(100*time.Millisecond), old)
	waitWrites(t, w, 50)

	made := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret.Name, Labels: secret.Labels}, Type: secret.Type, Data: secret.Data}
	if err := c.Create(ctx, made); err != nil {
		t.Fatal(err)
	}
	r.waitRunning(5 * time.Minute)
	toReady := time.Since(deleted)
	acked, lost := r.finish(w, "the password Secret deleted, then the primary's pod deleted; the Secret made again", toReady)
	t.Logf("the primary is %s; Running %v after the pod was deleted; %d writes acknowledged, %d lost", r.rec.Status.Primary, toReady.Round(100*time.Millisecond), acked, lost)
}
