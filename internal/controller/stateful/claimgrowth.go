package stateful

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/resources"
)

// A claim grows by a patch of its request; whether its StorageClass
// allows it is read, without the cache, from the class.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=patch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get

// GrowthInterval is how soon a pass comes back while a claim grows: the
// claim's status changes without an event the operator's kinds watch.
const GrowthInterval = 2 * time.Second

// Claims names the claims of a StatefulSet's volume claim template:
// <volume>-<statefulSet>-<ordinal>, with the labels selector.
type Claims struct {
	Namespace, StatefulSet, Volume string
	Selector                       map[string]string
}

// GrowClaims takes the next step in growing claims to size (see
// resources.NextClaimGrowth): it asks at most one claim for size, and
// only when no other is still growing and its StorageClass allows it.
// The claims are read from c (the cache), the StorageClasses from api.
func GrowClaims(ctx context.Context, c client.Client, api client.Reader, claims Claims, size resource.Quantity) (resources.ClaimGrowth, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := c.List(ctx, list, client.InNamespace(claims.Namespace), client.MatchingLabels(claims.Selector)); err != nil {
		return resources.ClaimGrowth{}, fmt.Errorf("list claims: %w", err)
	}
	prefix := claims.Volume + "-" + claims.StatefulSet + "-"
	var ours []corev1.PersistentVolumeClaim
	expandable := map[string]bool{}
	for _, pvc := range list.Items {
		ordinal, ok := strings.CutPrefix(pvc.Name, prefix)
		if _, err := strconv.Atoi(ordinal); !ok || err != nil || pvc.DeletionTimestamp != nil {
			continue
		}
		ours = append(ours, pvc)
		requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		class := ""
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		if _, seen := expandable[class]; seen || requested.Cmp(size) >= 0 || class == "" {
			continue
		}
		sc := &storagev1.StorageClass{}
		switch err := api.Get(ctx, types.NamespacedName{Name: class}, sc); {
		case err == nil:
			expandable[class] = sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		case apierrors.IsNotFound(err):
			expandable[class] = false
		default:
			return resources.ClaimGrowth{}, fmt.Errorf("get StorageClass %s: %w", class, err)
		}
	}
	g := resources.NextClaimGrowth(ours, size, expandable)
	if g.Grow == "" {
		return g, nil
	}
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size.String())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: claims.Namespace, Name: g.Grow}}
	if err := c.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return g, fmt.Errorf("grow claim %s to %s: %w", g.Grow, size.String(), err)
	}
	return g, nil
}

// SetGrowthCondition records g in conds as the VolumeExpansion condition:
// True while a claim grows, False when none can (NotExpandable) or, once
// the condition is there, when every claim is at the size. A cluster
// whose claims never had to grow gets no condition; g nil (no growth was
// looked at in the pass) leaves the condition as it is.
func SetGrowthCondition(conds *[]metav1.Condition, generation int64, g *resources.ClaimGrowth, now metav1.Time) {
	if g == nil {
		return
	}
	c := metav1.Condition{Type: conditions.VolumeExpansion, ObservedGeneration: generation, Message: g.Message(), LastTransitionTime: now}
	switch {
	case g.NotExpandable != "":
		c.Status, c.Reason = metav1.ConditionFalse, conditions.ReasonNotExpandable
	case g.Expanding():
		c.Status, c.Reason = metav1.ConditionTrue, conditions.ReasonExpanding
	case meta.FindStatusCondition(*conds, conditions.VolumeExpansion) == nil:
		return
	default:
		c.Status, c.Reason = metav1.ConditionFalse, conditions.ReasonExpanded
	}
	meta.SetStatusCondition(conds, c)
}
