package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The real nodes' storage: StorageClasses whose volumes are folders of a
// node (hostPath PersistentVolumes), made by a small provisioner that runs
// in the process that owns the cluster. As local storage does in real
// clusters, a claim of its classes waits for its first pod
// (WaitForFirstConsumer): once the scheduler has picked the pod's node, the
// provisioner gives the claim a volume of its own in that node's folder
// (realnode/volumes/pvc-<uid> for the one node,
// realnode/nodes/<node>/volumes/pvc-<uid> for each of several), pinned to
// that node, and deletes a released volume with its folder. Sizes are
// recorded, not enforced. A claim of the class StorageClassExpandable may
// grow: the provisioner plays the volume resizer too (see resize).
const (
	// HostPathProvisioner is the provisioner name of the classes.
	HostPathProvisioner = "app-operator.local/hostpath"
	// StorageClassStandard is the default class; StorageClassGP2 is the
	// class the RedisEnterpriseCluster sample names (an AWS EBS class in
	// the cluster it was written for).
	StorageClassStandard = "standard"
	StorageClassGP2      = "gp2"
	// StorageClassExpandable allows volume expansion
	// (allowVolumeExpansion: true): a claim of it asked for more grows.
	StorageClassExpandable = "expandable"
	// provisionInterval is how often the provisioner looks for work.
	provisionInterval = 500 * time.Millisecond
)

// selectedNode is the annotation by which the scheduler names the node of
// a claim's first pod.
const selectedNode = "volume.kubernetes.io/selected-node"

// hostPathProvisioner provisions and deletes the hostPath volumes.
type hostPathProvisioner struct {
	cs kubernetes.Interface
	// dirs are where each node's volumes' folders are, by node name.
	dirs map[string]string
}

// startStorage creates the StorageClasses and starts the provisioner; the
// returned function stops it.
func (c *Cluster) startStorage(ctx context.Context, agents []*agent) (func(), error) {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return nil, err
	}
	for _, name := range []string{StorageClassStandard, StorageClassGP2, StorageClassExpandable} {
		sc := &storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: name},
			Provisioner:       HostPathProvisioner,
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		}
		if name == StorageClassExpandable {
			sc.AllowVolumeExpansion = ptr.To(true)
		}
		if name == StorageClassStandard {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create StorageClass %s: %w", name, err)
		}
	}
	p := &hostPathProvisioner{cs: cs, dirs: map[string]string{}}
	for _, a := range agents {
		p.dirs[a.name] = filepath.Join(a.dir, "volumes")
		if err := os.MkdirAll(p.dirs[a.name], 0o755); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(provisionInterval)
		defer t.Stop()
		for {
			// Errors are retried on the next tick: the API server may
			// be briefly away, a claim may change under the provisioner.
			_ = p.provision(ctx)
			_ = p.reclaim(ctx)
			_ = p.resize(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

func ours(class *string) bool {
	return class != nil && (*class == StorageClassStandard || *class == StorageClassGP2 || *class == StorageClassExpandable)
}

// resize plays, for the claims of StorageClassExpandable, the volume
// resizer of a real cluster (the external-resizer, then the kubelet, for
// a file system that needs no online grow: a folder has no size). A bound
// claim asking for more than its capacity is first marked Resizing; at the
// next look its volume's capacity is set to the request, then the claim's
// status.capacity, and its conditions cleared. So a claim takes at least
// one provisionInterval to grow, as a real one takes a while.
func (p *hostPathProvisioner) resize(ctx context.Context) error {
	claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, claim := range claims.Items {
		requested, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
		if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != StorageClassExpandable || claim.Status.Phase != corev1.ClaimBound ||
			claim.Spec.VolumeName == "" || requested.Cmp(capacity) <= 0 {
			continue
		}
		errs = append(errs, p.resizeClaim(ctx, &claim, requested))
	}
	return errors.Join(errs...)
}

func (p *hostPathProvisioner) resizeClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, requested resource.Quantity) error {
	resizing := slices.ContainsFunc(claim.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimResizing
	})
	if !resizing {
		claim.Status.Conditions = append(claim.Status.Conditions, corev1.PersistentVolumeClaimCondition{
			Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
		_, err := p.cs.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	}
	pv, err := p.cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(requested) < 0 {
		pv.Spec.Capacity[corev1.ResourceStorage] = requested
		if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	claim.Status.Capacity[corev1.ResourceStorage] = requested
	if claim.Status.AllocatedResources != nil {
		claim.Status.AllocatedResources[corev1.ResourceStorage] = requested
	}
	claim.Status.AllocatedResourceStatuses = nil
	claim.Status.Conditions = nil
	_, err = p.cs.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	return err
}

// provision makes a volume for every pending claim of the classes whose
// node the scheduler has picked.
func (p *hostPathProvisioner) provision(ctx context.Context) error {
	claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, claim := range claims.Items {
		if claim.Spec.VolumeName != "" || claim.Status.Phase != corev1.ClaimPending || !ours(claim.Spec.StorageClassName) || claim.DeletionTimestamp != nil ||
			p.dirs[claim.Annotations[selectedNode]] == "" {
			continue
		}
		errs = append(errs, p.provisionClaim(ctx, &claim))
	}
	return errors.Join(errs...)
}

func (p *hostPathProvisioner) provisionClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(claim.UID)
	node := claim.Annotations[selectedNode]
	path := filepath.Join(p.dirs[node], name)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	// Any user of the pod may write it: a hostPath volume takes no fsGroup.
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": HostPathProvisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              *claim.Spec.StorageClassName,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolume %s: %w", name, err)
	}
	return nil
}

// reclaim deletes the released volumes of the provisioner, and their
// folders.
func (p *hostPathProvisioner) reclaim(ctx context.Context) error {
	pvs, err := p.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, pv := range pvs.Items {
		if pv.Annotations["pv.kubernetes.io/provisioned-by"] != HostPathProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.HostPath == nil {
			continue
		}
		if !p.holds(pv.Spec.HostPath.Path) {
			continue
		}
		if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// holds reports whether path is a volume's folder in one of the nodes'
// folders: the provisioner deletes nothing else.
func (p *hostPathProvisioner) holds(path string) bool {
	for _, dir := range p.dirs {
		if filepath.Dir(path) == dir {
			return true
		}
	}
	return false
}
