package stateful

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/podhealth"
)

// A member's volume can be local to one node (local volumes, hostPath
// provisioners): its PersistentVolume's node affinity names that node by
// kubernetes.io/hostname. Once the node is gone (its Node deleted, as a
// cloud provider's node controller does when the machine is) or cordoned
// for a drain, the member's pod cannot be scheduled again, and its data is
// out of reach until the node comes back, if ever.

// The nodes and volumes are read only for an unscheduled member pod; the
// claim of a stranded volume is deleted, for the StatefulSet to make it
// again on a node that takes pods.
// +kubebuilder:rbac:groups="",resources=nodes;persistentvolumes,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;delete

// StrandedClaim returns the claim of pod whose volume is pinned to a node
// that is gone or cordoned, and says so; nil when the pod is scheduled or
// no claim of it is stranded. Only a pod the scheduler has tried and found
// no node for is looked at: the reads are not made for a pod on its way.
func StrandedClaim(ctx context.Context, api client.Reader, pod *corev1.Pod) (*corev1.PersistentVolumeClaim, string, error) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || podhealth.Unschedulable(pod) == nil {
		return nil, "", nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim := &corev1.PersistentVolumeClaim{}
		if err := api.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, claim); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, "", err
			}
			continue
		}
		node, why, err := strandedOn(ctx, api, claim)
		if err != nil || node != "" {
			return claim, fmt.Sprintf("its volume is local to node %s, which is %s", node, why), err
		}
	}
	return nil, "", nil
}

// DeleteStranded deletes the stranded claim (of uid claimUID) and then
// the pod (of uid podUID), each only if it is still that object.
func DeleteStranded(ctx context.Context, c client.Client, namespace, claimName, claimUID, podName, podUID string) error {
	cuid := types.UID(claimUID)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: claimName}}
	if err := c.Delete(ctx, claim, client.Preconditions{UID: &cuid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete claim %s: %w", claimName, err)
	}
	return EvictPodOfUID(ctx, c, namespace, podName, types.UID(podUID))
}

// strandedOn returns the node the volume of claim is pinned to when that
// node is gone or cordoned, with which of the two; "" when the volume is
// not pinned to one node, or its node takes pods. api reads without a
// cache: this is asked only for a member pod that is not scheduled.
func strandedOn(ctx context.Context, api client.Reader, claim *corev1.PersistentVolumeClaim) (node, why string, err error) {
	if claim == nil || claim.Spec.VolumeName == "" {
		return "", "", nil
	}
	pv := &corev1.PersistentVolume{}
	if err := api.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		return "", "", client.IgnoreNotFound(err)
	}
	node = pinnedNode(pv)
	if node == "" {
		return "", "", nil
	}
	n := &corev1.Node{}
	switch err := api.Get(ctx, client.ObjectKey{Name: node}, n); {
	case apierrors.IsNotFound(err):
		return node, "gone", nil
	case err != nil:
		return "", "", fmt.Errorf("get node %s: %w", node, err)
	case n.Spec.Unschedulable:
		return node, "cordoned", nil
	}
	return "", "", nil
}

// pinnedNode is the one node a PersistentVolume's node affinity allows by
// kubernetes.io/hostname, or "" when it allows others.
func pinnedNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	for _, req := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions {
		if req.Key == corev1.LabelHostname && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
			return req.Values[0]
		}
	}
	return ""
}
