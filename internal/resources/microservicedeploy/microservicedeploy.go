// Package microservicedeploy builds the children of a MicroServiceDeploy:
// the ServiceAccount, ConfigMap, Service and Deployment every instance has,
// the HorizontalPodAutoscaler while autoscaling is on, the Ingress when the
// operator exposes the instance, and the ResourceQuota its namespace shares
// with the other instances.
package microservicedeploy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv2ac "k8s.io/client-go/applyconfigurations/autoscaling/v2"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

// KindName is the app.kubernetes.io/name of every child.
const KindName = "microservicedeploy"

// Where the pods find their configuration.
const (
	// ConfigKey is the ConfigMap key holding spec.config.
	ConfigKey = "config"
	// ConfigFile is the file the pods read spec.config from.
	ConfigFile = "/etc/microservice/config"
	// SecretDir is where the keys of spec.configSecretName appear as files.
	SecretDir = "/etc/microservice/secret"
	// ConfigHashAnnotation on the pod template holds a hash of spec.config,
	// so that a change to the configuration rolls the pods.
	ConfigHashAnnotation = "custom.ops/config-hash"
	// InstanceAnnotation on the ServiceAccount names the instance it belongs
	// to. Its only other fields are the labels and the owner reference:
	// with both stripped, this annotation keeps the record of the
	// operator's apply in the ServiceAccount's managedFields, by which the
	// instance recognises and adopts it again (see the engine's adoptable).
	InstanceAnnotation = "custom.ops/microservicedeploy"
)

// Defaults of the optional fields.
const (
	DefaultPort                 = 8080
	DefaultTargetCPUUtilization = 80
	// DefaultAuthURLAnnotation is the Ingress annotation that makes
	// ingress-nginx check every request with an external endpoint.
	DefaultAuthURLAnnotation = "nginx.ingress.kubernetes.io/auth-url"
	// MaxSurgePercent is the Deployment's maxSurge: how many pods above the
	// desired count a rolling update may run. The quota leaves room for them.
	MaxSurgePercent = 25
	// servicePort is the port of the Service and of the Ingress backend.
	servicePort = 80
)

// Options are the operator-wide settings of the kind. The zero value
// exposes no instance.
type Options struct {
	// BaseDomain is the DNS domain instances are exposed under, as
	// <msName>-<path>.<BaseDomain>, each host by the one instance that
	// holds it. Empty: no Ingress, nothing exposed.
	BaseDomain string
	// IngressClassName is the Ingress class of the Ingresses; empty leaves
	// it to the cluster's default class.
	IngressClassName string
	// AuthURL is the external authentication endpoint the Ingress of an
	// instance with spec.needAuth checks every request with. Empty: such
	// instances are not exposed at all.
	AuthURL string
	// AuthURLAnnotation is the Ingress annotation that carries AuthURL;
	// DefaultAuthURLAnnotation when empty.
	AuthURLAnnotation string
}

// Validate reports settings the operator cannot work with.
func (o Options) Validate() error {
	var errs []error
	if o.BaseDomain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(o.BaseDomain) {
			errs = append(errs, fmt.Errorf("base domain %q: %s", o.BaseDomain, msg))
		}
	}
	if o.IngressClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(o.IngressClassName) {
			errs = append(errs, fmt.Errorf("ingress class %q: %s", o.IngressClassName, msg))
		}
	}
	if o.AuthURL != "" {
		u, err := url.Parse(o.AuthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("auth URL %q: want an absolute http or https URL", o.AuthURL))
		}
	}
	if o.AuthURLAnnotation != "" {
		for _, msg := range validation.IsQualifiedName(o.AuthURLAnnotation) {
			errs = append(errs, fmt.Errorf("auth URL annotation %q: %s", o.AuthURLAnnotation, msg))
		}
	}
	return errors.Join(errs...)
}

// Exposure is whether and where the operator exposes an instance.
type Exposure struct {
	// Host and URL are set when the instance is exposed.
	Host string
	URL  string
	// Reason and Message explain the decision, for the Exposed condition.
	Reason  string
	Message string
}

// Exposed reports whether the instance gets an Ingress.
func (e Exposure) Exposed() bool { return e.Host != "" }

// Expose decides whether the operator exposes an instance with spec, and
// at which host, if the instance holds that host (see HostHolder). It fails
// closed: an instance that needs authentication is never exposed without
// it, and wants no host.
func Expose(spec *customv1.MicroServiceDeploySpec, opts Options) Exposure {
	switch {
	case opts.BaseDomain == "":
		return Exposure{Reason: conditions.ReasonNoBaseDomain,
			Message: "The operator has no base domain, so it exposes no instance"}
	case spec.NeedAuth && opts.AuthURL == "":
		return Exposure{Reason: conditions.ReasonAuthUnavailable,
			Message: "spec.needAuth is true and the operator has no external authentication endpoint: the instance is not exposed, so that it is never reachable without authentication"}
	}
	host := spec.MsName + "-" + spec.Path + "." + opts.BaseDomain
	u := "http://" + host + "/"
	msg := "Reachable at " + u
	if spec.NeedAuth {
		msg += " behind external authentication"
	}
	return Exposure{Host: host, URL: u, Reason: conditions.ReasonIngressApplied, Message: msg}
}

// Children are the objects a MicroServiceDeploy owns.
type Children struct {
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap      *corev1ac.ConfigMapApplyConfiguration
	Service        *corev1ac.ServiceApplyConfiguration
	Deployment     *appsv1ac.DeploymentApplyConfiguration
	// HPA is nil unless autoscaling is on and the instance is not idle.
	HPA *autoscalingv2ac.HorizontalPodAutoscalerApplyConfiguration
	// Ingress is nil unless the instance is exposed.
	Ingress *networkingv1ac.IngressApplyConfiguration
	// ReplicasHandover is set while the HPA is on: the Deployment with only
	// spec.replicas, the HPA's minimum. The Deployment above leaves
	// spec.replicas out, so that the HPA alone sets it; this value is
	// applied once, under a field manager of its own, when the Deployment
	// is created or when the operator hands the field over, so that the
	// replica count never falls back to the default of 1 on the way.
	ReplicasHandover *appsv1ac.DeploymentApplyConfiguration
	Exposure         Exposure
}

// Objects returns the children in the order they are applied: the
// ServiceAccount and ConfigMap before the Deployment whose pods need them.
func (c Children) Objects() []runtime.ApplyConfiguration {
	out := []runtime.ApplyConfiguration{c.ServiceAccount, c.ConfigMap, c.Service, c.Deployment}
	if c.HPA != nil {
		out = append(out, c.HPA)
	}
	if c.Ingress != nil {
		out = append(out, c.Ingress)
	}
	return out
}

// Handovers returns the values applied once and then left to another writer.
func (c Children) Handovers() []runtime.ApplyConfiguration {
	if c.ReplicasHandover == nil {
		return nil
	}
	return []runtime.ApplyConfiguration{c.ReplicasHandover}
}

// Selector is the fixed pod selector of an instance.
func Selector(instance string) map[string]string {
	return resources.Selector(KindName, instance, nil)
}

// Replicas is spec.replicas, 1 when unset.
func Replicas(spec *customv1.MicroServiceDeploySpec) int32 {
	if spec.Replicas != nil {
		return *spec.Replicas
	}
	return 1
}

// MaxReplicas is the most pods the instance runs outside a rollout: the
// HPA's maximum with autoscaling, replicas without, 0 when idle.
func MaxReplicas(spec *customv1.MicroServiceDeploySpec) int32 {
	switch {
	case spec.Idle:
		return 0
	case !spec.Autoscaling:
		return Replicas(spec)
	case spec.AutoscalingMaxReplicas != nil:
		return *spec.AutoscalingMaxReplicas
	default:
		return max(2*Replicas(spec), 1)
	}
}

// Surge is how many pods a rolling update adds above n, as the Deployment
// controller rounds maxSurge: up.
func Surge(n int32) int32 {
	return int32((int64(n)*MaxSurgePercent + 99) / 100)
}

// Build returns the desired children of the MicroServiceDeploy owner with
// the given spec. Every child is named after the owner. holder is the
// namespace/name of another instance that holds the host the owner wants
// (see HostHolder): the owner then gets no Ingress. It is empty when the
// owner holds its host, or wants none.
func Build(owner resources.Owner, spec *customv1.MicroServiceDeploySpec, opts Options, defaults resources.Defaults, holder string) Children {
	selector := Selector(owner.Name)
	labels := resources.Merge(resources.Labels(selector), map[string]string{
		resources.LabelPartOf:  spec.MsName,
		resources.LabelVersion: spec.Version,
	})
	exposure := Expose(spec, opts).LostTo(holder)
	c := Children{
		ServiceAccount: corev1ac.ServiceAccount(owner.Name, owner.Namespace).
			WithLabels(labels).
			WithAnnotations(map[string]string{InstanceAnnotation: owner.Name}).
			WithOwnerReferences(owner.Reference()),
		ConfigMap: corev1ac.ConfigMap(owner.Name, owner.Namespace).
			WithLabels(labels).
			WithOwnerReferences(owner.Reference()).
			WithData(map[string]string{ConfigKey: spec.Config}),
		Service:    service(owner, selector, labels),
		Deployment: deployment(owner, spec, defaults, selector, labels),
		Exposure:   exposure,
	}
	if spec.Autoscaling && !spec.Idle {
		c.HPA = hpa(owner, spec, labels)
		c.ReplicasHandover = appsv1ac.Deployment(owner.Name, owner.Namespace).
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(Replicas(spec)))
	}
	if exposure.Exposed() {
		c.Ingress = ingress(owner, spec, opts, exposure.Host, labels)
	}
	return c
}

// ConfigHash is a short hash of the configuration, for the pod template.
func ConfigHash(config string) string {
	sum := sha256.Sum256([]byte(config))
	return hex.EncodeToString(sum[:8])
}

func service(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName("http").
				WithPort(servicePort).
				WithProtocol(corev1.ProtocolTCP).
				WithTargetPort(intstr.FromString("http"))))
}

func deployment(owner resources.Owner, spec *customv1.MicroServiceDeploySpec, defaults resources.Defaults, selector, labels map[string]string) *appsv1ac.DeploymentApplyConfiguration {
	port := int32(DefaultPort)
	if spec.Port != nil {
		port = *spec.Port
	}
	podSecurity, containerSecurity := resources.SecurityContexts(spec.Settings, defaults)
	container := corev1ac.Container().
		WithName(spec.MsName).
		WithSecurityContext(containerSecurity).
		WithImage(spec.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		WithLifecycle(resources.DrainLifecycle()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath(ConfigFile).WithSubPath(ConfigKey).WithReadOnly(true))
	if rr := spec.ResourceRequirements; len(rr.Limits) > 0 || len(rr.Requests) > 0 {
		container.WithResources(resources.Convert[corev1ac.ResourceRequirementsApplyConfiguration](
			corev1.ResourceRequirements{Limits: rr.Limits, Requests: rr.Requests}))
	}
	volumes := []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("config").
		WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(owner.Name))}
	if spec.ConfigSecretName != "" {
		container.WithVolumeMounts(corev1ac.VolumeMount().WithName("secret").WithMountPath(SecretDir).WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName("secret").
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(spec.ConfigSecretName)))
	}
	// The With* methods copy their arguments: the container is complete here.
	podSpec := corev1ac.PodSpec().
		WithServiceAccountName(owner.Name).
		WithPriorityClassName(PriorityClassName).
		WithSecurityContext(podSecurity).
		WithContainers(container).
		WithVolumes(volumes...).
		WithTopologySpreadConstraints(resources.DeploymentSpread(spec.Spread, selector))
	resources.Place(podSpec, spec.Placement)

	surge := intstr.FromString(fmt.Sprintf("%d%%", MaxSurgePercent))
	d := appsv1ac.Deployment(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxSurge(surge).WithMaxUnavailable(intstr.FromString("25%")))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithAnnotations(map[string]string{ConfigHashAnnotation: ConfigHash(spec.Config)}).
				WithSpec(podSpec)))
	switch {
	case spec.Idle:
		d.Spec.WithReplicas(0)
	case !spec.Autoscaling:
		d.Spec.WithReplicas(Replicas(spec))
	}
	// With autoscaling, spec.replicas is left to the HPA.
	return d
}

func hpa(owner resources.Owner, spec *customv1.MicroServiceDeploySpec, labels map[string]string) *autoscalingv2ac.HorizontalPodAutoscalerApplyConfiguration {
	target := int32(DefaultTargetCPUUtilization)
	if spec.AutoscalingTargetCPUUtilization != nil {
		target = *spec.AutoscalingTargetCPUUtilization
	}
	return autoscalingv2ac.HorizontalPodAutoscaler(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(autoscalingv2ac.HorizontalPodAutoscalerSpec().
			WithScaleTargetRef(autoscalingv2ac.CrossVersionObjectReference().
				WithAPIVersion(appsv1.SchemeGroupVersion.String()).
				WithKind("Deployment").
				WithName(owner.Name)).
			WithMinReplicas(Replicas(spec)).
			WithMaxReplicas(MaxReplicas(spec)).
			WithMetrics(autoscalingv2ac.MetricSpec().
				WithType(autoscalingv2.ResourceMetricSourceType).
				WithResource(autoscalingv2ac.ResourceMetricSource().
					WithName(corev1.ResourceCPU).
					WithTarget(autoscalingv2ac.MetricTarget().
						WithType(autoscalingv2.UtilizationMetricType).
						WithAverageUtilization(target)))))
}

func ingress(owner resources.Owner, spec *customv1.MicroServiceDeploySpec, opts Options, host string, labels map[string]string) *networkingv1ac.IngressApplyConfiguration {
	ingSpec := networkingv1ac.IngressSpec().
		WithRules(networkingv1ac.IngressRule().
			WithHost(host).
			WithHTTP(networkingv1ac.HTTPIngressRuleValue().
				WithPaths(networkingv1ac.HTTPIngressPath().
					WithPath("/").
					WithPathType(networkingv1.PathTypePrefix).
					WithBackend(networkingv1ac.IngressBackend().
						WithService(networkingv1ac.IngressServiceBackend().
							WithName(owner.Name).
							WithPort(networkingv1ac.ServiceBackendPort().WithName("http")))))))
	if opts.IngressClassName != "" {
		ingSpec.WithIngressClassName(opts.IngressClassName)
	}
	ing := networkingv1ac.Ingress(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(ingSpec)
	if spec.NeedAuth {
		ing.WithAnnotations(map[string]string{cmp.Or(opts.AuthURLAnnotation, DefaultAuthURLAnnotation): opts.AuthURL})
	}
	return ing
}
