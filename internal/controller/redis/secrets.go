package redis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// The claims of a cluster's nodes, which say that it has run.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch

// The password and the CA the operator makes for a cluster are made once:
// the running nodes know them (the password from their environment, the
// CA from their certificates), and a new one would lock the operator and
// the replicas out of them. When one's Secret is missing while the
// cluster has nodes, the operator makes none anew, and says so.

// refuseToMake returns, when the cluster has nodes (see nodesOf), a
// SecretMissing failure whose message is what says of them; nil when it
// has none, and a Secret it lacks may be made.
func (ops *redisOps) refuseToMake(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, what func(pods []string) string) error {
	pods, claims, err := ops.nodesOf(ctx, o)
	if err != nil {
		return err
	}
	if len(pods) == 0 && claims == 0 {
		return nil
	}
	return &conditions.Failure{Reason: redisv1alpha1.ReasonSecretMissing, Message: what(pods)}
}

// nodesOf returns the pods of the cluster's nodes and the number of their
// claims, those made since the cluster was: a claim kept from an earlier
// cluster of the same name (claims outlive their cluster) is not this
// one's.
func (ops *redisOps) nodesOf(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster) ([]string, int, error) {
	selector := client.MatchingLabels(redisenterprisecluster.Selector(o.Name))
	pods := &corev1.PodList{}
	if err := ops.client.List(ctx, pods, client.InNamespace(o.Namespace), selector); err != nil {
		return nil, 0, fmt.Errorf("list pods: %w", err)
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := ops.client.List(ctx, claims, client.InNamespace(o.Namespace), selector); err != nil {
		return nil, 0, fmt.Errorf("list claims: %w", err)
	}
	var names []string
	for i := range pods.Items {
		if !pods.Items[i].CreationTimestamp.Before(&o.CreationTimestamp) {
			names = append(names, pods.Items[i].Name)
		}
	}
	n := 0
	for i := range claims.Items {
		if !claims.Items[i].CreationTimestamp.Before(&o.CreationTimestamp) {
			n++
		}
	}
	return names, n, nil
}

// passwordMissing is the message of a missing password Secret: how to
// make it again, with the cluster's labels (the operator adopts a Secret
// of that name only with them) and the password the nodes run with.
func passwordMissing(o *redisv1alpha1.RedisEnterpriseCluster) func(pods []string) string {
	return func(pods []string) string {
		labels := resources.Labels(redisenterprisecluster.Selector(o.Name))
		pairs := make([]string, 0, len(labels))
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			pairs = append(pairs, k+"="+labels[k])
		}
		password := "PASSWORD"
		where := "the password the clients use"
		if len(pods) > 0 {
			password = fmt.Sprintf(`"$(kubectl exec -n %s %s -c %s -- printenv %s)"`, o.Namespace, pods[0], redisenterprisecluster.ContainerName, redisenterprisecluster.EnvCLIAuth)
			where = "a node that started with it has it in its environment"
		}
		return fmt.Sprintf("Secret %s, which holds the password the nodes run with, is missing while the cluster has pods or claims: "+
			"the operator makes no new password, which the running nodes would refuse. Create it again with its keys and the cluster's labels (%s): "+
			"kubectl create secret generic %s -n %s --from-literal=%s=%s --from-literal=%s=%s && kubectl label secret %s -n %s %s",
			o.Name, where, o.Name, o.Namespace, redisenterprisecluster.SecretUsername, redisenterprisecluster.Username(&o.Spec),
			redisenterprisecluster.SecretPassword, password, o.Name, o.Namespace, strings.Join(pairs, " "))
	}
}

// caMissing is the message of a missing CA Secret, called name.
func caMissing(name string) func(pods []string) string {
	return func([]string) string {
		return fmt.Sprintf("Secret %s, which holds the CA the nodes' certificates are issued from, is missing while the cluster has pods or claims: "+
			"the operator makes no new CA, which the running nodes would not trust. Restore it from a copy (keys tls.crt and tls.key); "+
			"or create it with a CA of your own, to which the nodes then move as to any new CA", name)
	}
}

// remembered keeps, in the operator's memory, what each cluster's nodes
// were last reached with: its password and its TLS. A pass whose Secret
// is missing or cannot serve still reaches the nodes with them for the
// steps that keep the data safe (a failover, a fence). An operator that
// restarts remembers nothing.
type remembered struct {
	mu sync.Mutex
	by map[client.ObjectKey]material
}

// material is what remembered keeps of one cluster (of its UID: a cluster
// made again under the same name starts with nothing).
type material struct {
	uid      types.UID
	password string
	tls      *redisTLS
}

func (r *remembered) get(o *redisv1alpha1.RedisEnterpriseCluster) material {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.by[client.ObjectKeyFromObject(o)]
	if m.uid != o.UID {
		return material{}
	}
	return m
}

// keep records the password, when not empty, and the TLS, when not nil,
// of a pass that read them.
func (r *remembered) keep(o *redisv1alpha1.RedisEnterpriseCluster, password string, t *redisTLS) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(o)
	m := r.by[key]
	if m.uid != o.UID {
		m = material{uid: o.UID}
	}
	if password != "" {
		m.password = password
	}
	if t != nil {
		m.tls = t
	}
	if r.by == nil {
		r.by = map[client.ObjectKey]material{}
	}
	r.by[key] = m
}

func (r *remembered) forget(key client.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.by, key)
}
