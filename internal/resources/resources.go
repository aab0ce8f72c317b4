// Package resources holds what every kind's builder shares: the labels, the
// owner reference and the conversions into apply configurations. Like the
// builders under it, it is pure: no client, no context, no clock.
package resources

import (
	"cmp"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/app-operator/app-operator/api/podsecurity"
)

// Recommended labels (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/).
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelVersion   = "app.kubernetes.io/version"

	// ManagedBy is the value of LabelManagedBy on every child. The operator's
	// cache only holds objects that carry it.
	ManagedBy = "app-operator"
)

// Owner identifies the custom resource the children belong to.
type Owner struct {
	GVK       schema.GroupVersionKind
	Name      string
	Namespace string
	UID       string
}

// OwnerOf returns the Owner of obj, whose kind is gvk.
func OwnerOf(obj metav1.Object, gvk schema.GroupVersionKind) Owner {
	return Owner{GVK: gvk, Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: string(obj.GetUID())}
}

// Reference is the controller owner reference every child carries: the
// garbage collector deletes the child with its owner.
func (o Owner) Reference() *metav1ac.OwnerReferenceApplyConfiguration {
	return o.SharedReference().WithController(true).WithBlockOwnerDeletion(true)
}

// SharedReference is an owner reference that does not claim control, for an
// object several resources own together (the garbage collector deletes it
// with the last of them).
func (o Owner) SharedReference() *metav1ac.OwnerReferenceApplyConfiguration {
	ref := metav1ac.OwnerReference().
		WithAPIVersion(o.GVK.GroupVersion().String()).
		WithKind(o.GVK.Kind).
		WithName(o.Name)
	if o.UID != "" {
		ref.WithUID(types.UID(o.UID))
	}
	return ref
}

// Selector is the fixed label set that selects an instance's pods: the
// instance name and the kind, so two resources never share pods. extra holds
// labels a seed selects on (such as `app: <name>`). Selectors are immutable
// in Deployments, so nothing user-controlled ever enters one.
func Selector(kindName, instance string, extra map[string]string) map[string]string {
	s := map[string]string{LabelName: kindName, LabelInstance: instance}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// Labels are the labels of every child: the selector plus managed-by.
func Labels(selector map[string]string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy}
	for k, v := range selector {
		l[k] = v
	}
	return l
}

// Merge returns the union of maps; later maps win.
func Merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Convert turns an API value (such as a core/v1 EnvVar) into the apply
// configuration of the same shape, through JSON. Both sides are generated
// from the same schema, so the conversion cannot lose a field.
func Convert[AC any](in any) *AC {
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", in, err))
	}
	out := new(AC)
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("unmarshal %T into %T: %v", in, out, err))
	}
	return out
}

// Defaults are the operator-wide settings a builder falls back on.
type Defaults struct {
	// SecurityProfile applies to resources that do not choose one.
	SecurityProfile podsecurity.Profile
}

// SecurityContexts returns the pod- and container-level security contexts
// for the settings: the profile's (the resource's, else the operator's
// default, else Baseline), each replaced by the user's own when given.
func SecurityContexts(s podsecurity.Settings, d Defaults) (*corev1ac.PodSecurityContextApplyConfiguration, *corev1ac.SecurityContextApplyConfiguration) {
	profile := cmp.Or(s.SecurityProfile, d.SecurityProfile)
	pod := corev1ac.PodSecurityContext().
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	container := corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false)
	if profile == podsecurity.Restricted {
		pod.WithRunAsNonRoot(true)
		container.
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	}
	if s.PodSecurityContext != nil {
		pod = Convert[corev1ac.PodSecurityContextApplyConfiguration](s.PodSecurityContext)
	}
	if s.SecurityContext != nil {
		container = Convert[corev1ac.SecurityContextApplyConfiguration](s.SecurityContext)
	}
	return pod, container
}
