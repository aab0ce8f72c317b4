package fuzzspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/app-operator/app-operator/internal/resources"
)

// child is the part of a built child the invariants look at, read back from
// its JSON as the API server would receive it.
type child struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		Labels          map[string]string `json:"labels"`
		OwnerReferences []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			UID        string `json:"uid"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		// Service
		Selector json.RawMessage `json:"selector"`
		// Deployment
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				TopologySpreadConstraints []struct {
					LabelSelector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"labelSelector"`
				} `json:"topologySpreadConstraints"`
			} `json:"spec"`
		} `json:"template"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
	} `json:"spec"`
}

// CheckChildren checks the invariants every kind's children hold, whatever
// the spec: each child is named after the owner, in its namespace, carries
// the kind and instance labels and the owner's controller reference, and
// every selector (a Deployment's, the Service's, the PodDisruptionBudget's,
// a spread constraint's) selects a subset of the pod template's labels, so
// the workload's own pods are the ones selected. kindName is the value of
// app.kubernetes.io/name.
func CheckChildren(owner resources.Owner, kindName string, objs []runtime.ApplyConfiguration) error {
	var errs []error
	var children []child
	var templateLabels map[string]string
	for i, obj := range objs {
		if obj == nil || reflect.ValueOf(obj).IsNil() {
			errs = append(errs, fmt.Errorf("child %d is nil", i))
			continue
		}
		data, err := json.Marshal(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("child %d: marshal: %w", i, err))
			continue
		}
		var c child
		if err := json.Unmarshal(data, &c); err != nil {
			errs = append(errs, fmt.Errorf("child %d: unmarshal: %w", i, err))
			continue
		}
		children = append(children, c)
		if c.Kind == "Deployment" {
			templateLabels = c.Spec.Template.Metadata.Labels
		}
	}
	for _, c := range children {
		id := c.Kind + " " + c.Metadata.Name
		m := c.Metadata
		if c.Kind == "" {
			errs = append(errs, fmt.Errorf("%s: no kind", id))
		}
		if m.Name != owner.Name {
			errs = append(errs, fmt.Errorf("%s: named %q, want the owner's name %q", id, m.Name, owner.Name))
		}
		if m.Namespace != owner.Namespace {
			errs = append(errs, fmt.Errorf("%s: in namespace %q, want %q", id, m.Namespace, owner.Namespace))
		}
		if m.Labels[resources.LabelInstance] != owner.Name || m.Labels[resources.LabelName] != kindName || m.Labels[resources.LabelManagedBy] != resources.ManagedBy {
			errs = append(errs, fmt.Errorf("%s: labels %v lack the instance, kind or managed-by label", id, m.Labels))
		}
		controllers := 0
		for _, ref := range m.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				controllers++
				if ref.Name != owner.Name || ref.Kind != owner.GVK.Kind || ref.APIVersion != owner.GVK.GroupVersion().String() || ref.UID != owner.UID {
					errs = append(errs, fmt.Errorf("%s: controller reference %+v is not the owner %+v", id, ref, owner))
				}
			}
		}
		if controllers != 1 {
			errs = append(errs, fmt.Errorf("%s: %d controller references, want 1", id, controllers))
		}

		switch c.Kind {
		case "Deployment":
			var sel struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			if err := json.Unmarshal(c.Spec.Selector, &sel); err != nil || len(sel.MatchLabels) == 0 {
				errs = append(errs, fmt.Errorf("%s: no selector (%v)", id, err))
			}
			errs = append(errs, subset(id+" selector", sel.MatchLabels, templateLabels))
			if sel.MatchLabels[resources.LabelInstance] != owner.Name {
				errs = append(errs, fmt.Errorf("%s: selector %v does not select on the instance", id, sel.MatchLabels))
			}
			for _, tsc := range c.Spec.Template.Spec.TopologySpreadConstraints {
				errs = append(errs, subset(id+" spread constraint", tsc.LabelSelector.MatchLabels, templateLabels))
			}
		case "Service":
			var sel map[string]string
			if err := json.Unmarshal(c.Spec.Selector, &sel); err != nil || len(sel) == 0 {
				errs = append(errs, fmt.Errorf("%s: no selector (%v)", id, err))
			}
			errs = append(errs, subset(id+" selector", sel, templateLabels))
		case "PodDisruptionBudget":
			var sel struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			if err := json.Unmarshal(c.Spec.Selector, &sel); err != nil || len(sel.MatchLabels) == 0 {
				errs = append(errs, fmt.Errorf("%s: no selector (%v)", id, err))
			}
			errs = append(errs, subset(id+" selector", sel.MatchLabels, templateLabels))
		case "HorizontalPodAutoscaler":
			if c.Spec.ScaleTargetRef.Kind != "Deployment" || c.Spec.ScaleTargetRef.Name != owner.Name {
				errs = append(errs, fmt.Errorf("%s: scales %+v, want the owner's Deployment", id, c.Spec.ScaleTargetRef))
			}
		}
	}
	return errors.Join(errs...)
}

// subset fails unless every label of sel is in labels with the same value.
// An empty labels (no Deployment among the children) fails too.
func subset(what string, sel, labels map[string]string) error {
	if len(labels) == 0 {
		return fmt.Errorf("%s: no pod template labels to select", what)
	}
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return fmt.Errorf("%s: %s=%s is not a label of the pod template %v", what, k, v, labels)
		}
	}
	return nil
}

// Same reports whether two builds gave the same children: the builders
// are pure, so building twice must.
func Same(a, b []runtime.ApplyConfiguration) error {
	ja, err := json.Marshal(a)
	if err != nil {
		return err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if string(ja) != string(jb) {
		return fmt.Errorf("two builds of one spec differ:\n%s\n%s", ja, jb)
	}
	return nil
}
