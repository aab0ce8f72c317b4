// Package appservice builds the children of an AppService or a WebService: a
// Deployment running the image and a Service exposing its ports.
package appservice

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

// Children are the objects an AppService or WebService owns.
type Children struct {
	Deployment *appsv1ac.DeploymentApplyConfiguration
	Service    *corev1ac.ServiceApplyConfiguration
}

// Objects returns the children in the order they are applied: the Service
// first, so that a spec the cluster rejects there (a node port already
// taken) changes nothing.
func (c Children) Objects() []runtime.ApplyConfiguration {
	return []runtime.ApplyConfiguration{c.Service, c.Deployment}
}

// Build returns the desired children of the resource owner with the given spec.
// Both children are named after the owner.
func Build(owner resources.Owner, spec *appv1.AppServiceSpec, defaults resources.Defaults) Children {
	selector := Selector(owner)
	labels := resources.Labels(selector)
	return Children{
		Deployment: deployment(owner, spec, defaults, selector, labels),
		Service:    service(owner, spec, selector, labels),
	}
}

// Selector is the fixed pod selector: the seed's `app: <name>` plus the
// kind and instance, so an AppService and a WebService never share pods.
func Selector(owner resources.Owner) map[string]string {
	return resources.Selector(strings.ToLower(owner.GVK.Kind), owner.Name, map[string]string{"app": owner.Name})
}

func deployment(owner resources.Owner, spec *appv1.AppServiceSpec, defaults resources.Defaults, selector, labels map[string]string) *appsv1ac.DeploymentApplyConfiguration {
	podSecurity, containerSecurity := resources.SecurityContexts(spec.Settings, defaults)
	ports := containerPorts(spec.Ports)
	container := corev1ac.Container().
		WithName(owner.Name).
		WithImage(spec.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithPorts(ports...).
		WithLifecycle(resources.DrainLifecycle()).
		WithSecurityContext(containerSecurity)
	if len(ports) > 0 && *ports[0].Protocol == corev1.ProtocolTCP {
		// Ready once the first port accepts connections, not when the
		// process starts: a Service sends nothing to a pod before.
		container.WithReadinessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromInt32(*ports[0].ContainerPort))).
			WithPeriodSeconds(2))
	}
	if len(spec.Envs) > 0 {
		for i := range spec.Envs {
			container.WithEnv(resources.Convert[corev1ac.EnvVarApplyConfiguration](spec.Envs[i]))
		}
	}
	if len(spec.Resources.Limits) > 0 || len(spec.Resources.Requests) > 0 || len(spec.Resources.Claims) > 0 {
		container.WithResources(resources.Convert[corev1ac.ResourceRequirementsApplyConfiguration](spec.Resources))
	}

	podSpec := corev1ac.PodSpec().
		WithSecurityContext(podSecurity).
		WithContainers(container).
		WithTopologySpreadConstraints(resources.DeploymentSpread(spec.Spread, selector))
	resources.Place(podSpec, spec.Placement)
	template := corev1ac.PodTemplateSpec().
		// User labels first: the selector labels must win.
		WithLabels(resources.Merge(spec.PodLabels, labels)).
		WithSpec(podSpec)
	if len(spec.PodAnnotations) > 0 {
		template.WithAnnotations(spec.PodAnnotations)
	}

	d := appsv1ac.Deployment(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(template))
	if spec.Size != nil {
		d.Spec.WithReplicas(*spec.Size)
	}
	return d
}

// containerPorts opens each Service port's target port once per protocol.
func containerPorts(ports []appv1.ServicePort) []*corev1ac.ContainerPortApplyConfiguration {
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	seen := map[key]bool{}
	var out []*corev1ac.ContainerPortApplyConfiguration
	for _, p := range ports {
		k := key{targetPort(p), protocol(p)}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, corev1ac.ContainerPort().WithContainerPort(k.port).WithProtocol(k.protocol))
	}
	return out
}

func service(owner resources.Owner, spec *appv1.AppServiceSpec, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	svcType := cmp.Or(spec.ServiceType, corev1.ServiceTypeNodePort)
	s := corev1ac.ServiceSpec().WithType(svcType).WithSelector(selector)
	for _, p := range spec.Ports {
		port := corev1ac.ServicePort().
			WithPort(p.Port).
			WithProtocol(protocol(p)).
			WithTargetPort(intstr.FromInt32(targetPort(p)))
		if p.Name != "" {
			port.WithName(p.Name)
		}
		if p.AppProtocol != nil {
			port.WithAppProtocol(*p.AppProtocol)
		}
		// An unset node port is left to the cluster, and not owned by the
		// operator, so the allocated value is never taken back.
		if p.NodePort != 0 && svcType != corev1.ServiceTypeClusterIP {
			port.WithNodePort(p.NodePort)
		}
		s.WithPorts(port)
	}
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(s)
}

func targetPort(p appv1.ServicePort) int32 {
	if p.TargetPort != nil && p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal != 0 {
		return p.TargetPort.IntVal
	}
	return p.Port
}

func protocol(p appv1.ServicePort) corev1.Protocol {
	return cmp.Or(p.Protocol, corev1.ProtocolTCP)
}
