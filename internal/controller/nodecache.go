package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Two things the operator reads of a node. A drain cordons a node and
// then evicts its pods: a Redis primary on a cordoned node is handed over
// before its eviction, which its disruption budget holds meanwhile; the
// cordon is what says the drain has begun. A node that stops reporting
// (NotReady) may leave its pods' Ready condition as it was: an etcd member
// there that does not answer is down, not merely out of the operator's
// reach.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// transformNode is the cache transform of the Nodes: whether a node is
// cordoned and its Ready condition are all the operator reads of one from
// its cache, so the cache keeps those and the name, not the images,
// addresses and other conditions a Node carries.
func transformNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			kept.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return kept, nil
}

// OnlyRead reports whether o's type is one the cache holds that the
// operator never applies (the Nodes), so that the apply schema leaves it
// out.
func OnlyRead(o client.Object) bool {
	_, ok := o.(*corev1.Node)
	return ok
}
