package plugin

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// Logs opens the log of a container of a pod.
type Logs func(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error)

// Operator says where the operator runs, for the report's log lines.
type Operator struct {
	Namespace string
	// Selector selects the operator's pods.
	Selector map[string]string
	// Container is the operator's container in them.
	Container string
}

// Report writes to w, as a gzipped tar archive, what a bug report about t
// needs: the resource, the objects it owns (directly, or through an
// object it owns: the pods of its StatefulSet), with the keys of its
// Secrets but never their values, its events and its children's, and
// the lines of the operator's log that name it. It returns the names of
// the files written.
func Report(ctx context.Context, c client.Reader, scheme *runtime.Scheme, logs Logs, op Operator, t *Target, now time.Time, w io.Writer) ([]string, error) {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	var names []string
	add := func(name string, data []byte) error {
		names = append(names, name)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	addObject := func(name string, obj client.Object) error {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		obj.SetManagedFields(nil)
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		return add(name, data)
	}

	if err := addObject("resource.yaml", t.Obj); err != nil {
		return nil, err
	}
	children, err := owned(ctx, c, t.Obj)
	if err != nil {
		return nil, err
	}
	uids := []types.UID{t.Obj.GetUID()}
	for _, child := range children {
		if s, ok := child.(*corev1.Secret); ok {
			// The keys only: a report is shared, a Secret's values never.
			for k := range s.Data {
				s.Data[k] = []byte("(withheld)")
			}
			s.StringData = nil
		}
		gvk, _ := apiutil.GVKForObject(child, scheme)
		if err := addObject(fmt.Sprintf("children/%s-%s.yaml", strings.ToLower(gvk.Kind), child.GetName()), child); err != nil {
			return nil, err
		}
		uids = append(uids, child.GetUID())
	}

	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(t.Obj.GetNamespace())); client.IgnoreNotFound(err) != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list events: %w", err)
	}
	events.Items = slices.DeleteFunc(events.Items, func(e corev1.Event) bool { return !slices.Contains(uids, e.InvolvedObject.UID) })
	slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	events.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("EventList"))
	data, err := yaml.Marshal(events)
	if err != nil {
		return nil, err
	}
	if err := add("events.yaml", data); err != nil {
		return nil, err
	}

	log, err := operatorLog(ctx, c, logs, op, t.Obj)
	if err != nil {
		return nil, err
	}
	if err := add("operator.log", log); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return names, zw.Close()
}

// ownedTypes are the kinds of objects the operator makes for its
// resources, and those the cluster makes from them (pods, ReplicaSets).
func ownedTypes() []client.ObjectList {
	return []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &appsv1.StatefulSetList{}, &corev1.PodList{},
		&corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.PersistentVolumeClaimList{},
		&policyv1.PodDisruptionBudgetList{}, &batchv1.JobList{}, &batchv1.CronJobList{}}
}

// owned returns the objects of obj's namespace that obj owns, directly or
// through another it owns; and the claims of its StatefulSets, which
// their pods use but no one owns.
func owned(ctx context.Context, c client.Reader, obj client.Object) ([]client.Object, error) {
	var all []client.Object
	for _, list := range ownedTypes() {
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			if apierrors.IsForbidden(err) {
				continue
			}
			return nil, err
		}
		items, err := metaItems(list)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
	}
	owners := map[types.UID]bool{obj.GetUID(): true}
	var out []client.Object
	for grew := true; grew; {
		grew = false
		for _, o := range all {
			if owners[o.GetUID()] {
				continue
			}
			for _, ref := range o.GetOwnerReferences() {
				if owners[ref.UID] {
					owners[o.GetUID()], grew = true, true
					out = append(out, o)
					break
				}
			}
		}
	}
	// A StatefulSet's claims are named <template>-<statefulset>-<n>.
	for _, o := range all {
		claim, ok := o.(*corev1.PersistentVolumeClaim)
		if !ok || owners[claim.UID] {
			continue
		}
		for _, s := range out {
			if sts, ok := s.(*appsv1.StatefulSet); ok && claimOf(sts, claim.Name) {
				out = append(out, claim)
				break
			}
		}
	}
	return out, nil
}

// claimOf reports whether the claim called name was made from a claim
// template of sts.
func claimOf(sts *appsv1.StatefulSet, name string) bool {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if strings.HasPrefix(name, t.Name+"-"+sts.Name+"-") {
			return true
		}
	}
	return false
}

// metaItems returns the items of list as objects.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("an item of %T is no object", list)
		}
		out = append(out, obj)
	}
	return out, nil
}

// operatorLog returns the lines of the operator's log (every pod of it)
// that name obj: its namespace and name, as the operator's structured
// log writes them. A log it may not read is said in the file.
func operatorLog(ctx context.Context, c client.Reader, logs Logs, op Operator, obj client.Object) ([]byte, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(op.Namespace), client.MatchingLabels(op.Selector)); err != nil {
		if apierrors.IsForbidden(err) {
			return []byte(fmt.Sprintf("# the operator's pods in %s could not be listed: %v\n", op.Namespace, err)), nil
		}
		return nil, err
	}
	if len(pods.Items) == 0 {
		return []byte(fmt.Sprintf("# no pod of the operator in namespace %s (--operator-namespace)\n", op.Namespace)), nil
	}
	name, namespace := fmt.Sprintf("%q", obj.GetName()), fmt.Sprintf("%q", obj.GetNamespace())
	var out strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&out, "# pod %s/%s\n", p.Namespace, p.Name)
		r, err := logs(ctx, p.Namespace, p.Name, op.Container)
		if err != nil {
			fmt.Fprintf(&out, "# its log could not be read: %v\n", err)
			continue
		}
		scan := bufio.NewScanner(r)
		scan.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for scan.Scan() {
			if l := scan.Text(); strings.Contains(l, name) && strings.Contains(l, namespace) {
				out.WriteString(l + "\n")
			}
		}
		err = scan.Err()
		_ = r.Close()
		if err != nil {
			fmt.Fprintf(&out, "# reading its log failed: %v\n", err)
		}
	}
	return []byte(out.String()), nil
}
