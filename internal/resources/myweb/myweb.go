// Package myweb builds the children of a MyWeb: a ConfigMap holding the page,
// an nginx Deployment serving it, and a NodePort Service exposing it.
package myweb

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

const (
	// HTMLDir is where the nginx image serves its default site from; the
	// ConfigMap is mounted there.
	HTMLDir = "/usr/share/nginx/html"
	// PageKey is the ConfigMap key, and the file name, of the page.
	PageKey = "index.html"
	// PageHashAnnotation on the pod template carries PageHash of the page,
	// so that a new page rolls the pods.
	PageHashAnnotation = "operator.k8s-summit.org/page-sha256"
	// Port is the port nginx listens on and the Service's port.
	Port = 80

	volumeName = "html"
	portName   = "http"
)

// Children are the objects a MyWeb owns, all named after it.
type Children struct {
	Service    *corev1ac.ServiceApplyConfiguration
	ConfigMap  *corev1ac.ConfigMapApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
}

// Objects returns the children in the order they are applied: the Service
// first, so that a node port the cluster refuses (taken, or out of range)
// changes nothing; then the ConfigMap, so that the pods of a new Deployment
// find the page.
func (c Children) Objects() []runtime.ApplyConfiguration {
	return []runtime.ApplyConfiguration{c.Service, c.ConfigMap, c.Deployment}
}

// Build returns the desired children of the MyWeb owner with the given spec.
func Build(owner resources.Owner, spec *operatorv1.MyWebSpec, defaults resources.Defaults) Children {
	selector := Selector(owner)
	labels := resources.Labels(selector)
	return Children{
		Service:    service(owner, spec, selector, labels),
		ConfigMap:  configMap(owner, spec, labels),
		Deployment: deployment(owner, spec, defaults, selector, labels),
	}
}

// Selector is the fixed pod selector: the seed's `app: <name>` plus the kind
// and instance.
func Selector(owner resources.Owner) map[string]string {
	return resources.Selector(strings.ToLower(owner.GVK.Kind), owner.Name, map[string]string{"app": owner.Name})
}

// PageHash is the hex SHA-256 of the page. It changes exactly when the page
// does, and never otherwise: a different value rolls every pod.
func PageHash(html string) string {
	sum := sha256.Sum256([]byte(html))
	return hex.EncodeToString(sum[:])
}

func configMap(owner resources.Owner, spec *operatorv1.MyWebSpec, labels map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithData(map[string]string{PageKey: spec.PageContentHtml})
}

func deployment(owner resources.Owner, spec *operatorv1.MyWebSpec, defaults resources.Defaults, selector, labels map[string]string) *appsv1ac.DeploymentApplyConfiguration {
	podSecurity, containerSecurity := resources.SecurityContexts(spec.Settings, defaults)
	container := corev1ac.Container().
		WithName(owner.Name).
		WithSecurityContext(containerSecurity).
		WithImage(spec.Image).
		WithLifecycle(resources.DrainLifecycle()).
		WithPorts(corev1ac.ContainerPort().WithName(portName).WithContainerPort(Port).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volumeName).WithMountPath(HTMLDir).WithReadOnly(true)).
		// Available means the page is served, not only that nginx started.
		WithReadinessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath("/").WithPort(intstr.FromString(portName))))
	page := corev1ac.Volume().WithName(volumeName).WithConfigMap(corev1ac.ConfigMapVolumeSource().
		WithName(owner.Name).
		WithItems(corev1ac.KeyToPath().WithKey(PageKey).WithPath(PageKey)))

	podSpec := corev1ac.PodSpec().
		WithSecurityContext(podSecurity).
		WithContainers(container).
		WithVolumes(page).
		WithTopologySpreadConstraints(resources.DeploymentSpread(spec.Spread, selector))
	resources.Place(podSpec, spec.Placement)

	return appsv1ac.Deployment(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(ptr.Deref(spec.Replicas, 1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithAnnotations(map[string]string{PageHashAnnotation: PageHash(spec.PageContentHtml)}).
				WithSpec(podSpec)))
}

func service(owner resources.Owner, spec *operatorv1.MyWebSpec, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeNodePort).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName(portName).
				WithPort(Port).
				WithProtocol(corev1.ProtocolTCP).
				WithTargetPort(intstr.FromString(portName)).
				WithNodePort(spec.NodePortNumber)))
}
