package redisenterprisecluster

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

// The console of a cluster: a Deployment of the operator's image running
// ConsoleCommand, which serves a web console (UIPort) and a REST API
// (APIPort) over TLS, reads the cluster, its credentials Secret and its
// nodes (INFO, read-only), and may patch the cluster (its annotations: a
// switchover, a backup). Its service account may do nothing else.
const (
	// ConsoleKindName is the value of app.kubernetes.io/name on the
	// console's objects and pod: not the cluster's, so that its pod
	// selector never takes the console's pod for a node.
	ConsoleKindName = "redisconsole"
	// ConsoleCommand is the console server in the operator's image.
	ConsoleCommand = "/redis-console"
	// ConsoleContainerName names the console's container.
	ConsoleContainerName = "console"
	// APIPortName and APIPort are the REST API's port, on the container
	// and the `<name>-ui` Service.
	APIPortName = "api"
	APIPort     = 9443
	// ConsoleHealthPath answers 200 without authentication once the
	// console serves: its readiness probe.
	ConsoleHealthPath = "/healthz"
	// ConsoleTLSDir is where the console's TLS Secret is mounted.
	ConsoleTLSDir = "/tls"
	// consoleTLSVolume and consoleTmpVolume name the console pod's
	// volumes.
	consoleTLSVolume = "tls"
	consoleTmpVolume = "tmp"
)

// Names of the console's objects.

// ConsoleName is the name of the console's Deployment, service account,
// Role and RoleBinding: the `<name>-ui` Service's.
func ConsoleName(name string) string { return UIServiceName(name) }

// ConsoleTLSSecretName is the Secret of the certificate the operator
// issues the console when the cluster has no spec.tls, and
// ConsoleTLSCASecretName the Secret of its CA.
func ConsoleTLSSecretName(name string) string   { return ConsoleName(name) + "-tls" }
func ConsoleTLSCASecretName(name string) string { return ConsoleName(name) + "-tls-ca" }

// ConsoleTLSSecret is the Secret the console serves TLS with: spec.tls's,
// whose issued certificate names the `<name>-ui` Service (TLSHosts), or,
// without spec.tls, the one the operator issues for it
// (ConsoleTLSSecretName, for ConsoleHosts).
func ConsoleTLSSecret(name string, spec *redisv1alpha1.RedisEnterpriseClusterSpec) string {
	if spec.TLS != nil {
		return TLSSecretName(name, spec.TLS)
	}
	return ConsoleTLSSecretName(name)
}

// ConsoleHosts are the names of the certificate the operator issues the
// console without spec.tls: the `<name>-ui` Service's, short, within the
// namespace, and in full.
func ConsoleHosts(name, namespace string) []string {
	ui := UIServiceName(name)
	return []string{ui + "." + namespace + ".svc", ui + "." + namespace, ui}
}

// ConsoleSelector is the fixed pod selector of the console of the cluster
// called name.
func ConsoleSelector(name string) map[string]string {
	return resources.Selector(ConsoleKindName, name, nil)
}

// ConsoleEnabled reports whether the cluster runs its console:
// spec.console.enabled, true when left out.
func ConsoleEnabled(spec *redisv1alpha1.RedisEnterpriseClusterSpec) bool {
	return spec.Console == nil || spec.Console.Enabled == nil || *spec.Console.Enabled
}

// ConsoleChildren are the console's objects.
type ConsoleChildren struct {
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	Role           *rbacv1ac.RoleApplyConfiguration
	RoleBinding    *rbacv1ac.RoleBindingApplyConfiguration
	Deployment     *appsv1ac.DeploymentApplyConfiguration
}

// Objects returns the console's objects in the order they are applied:
// the pod's permissions before the pod.
func (c ConsoleChildren) Objects() []runtime.ApplyConfiguration {
	return []runtime.ApplyConfiguration{c.ServiceAccount, c.Role, c.RoleBinding, c.Deployment}
}

// ConsoleResources are the console container's resources:
// spec.console.resources (refused as Resources refuses
// spec.redisEnterpriseNodeResources), or small defaults.
func ConsoleResources(spec *redisv1alpha1.RedisEnterpriseClusterSpec) (corev1.ResourceRequirements, error) {
	if spec.Console != nil && spec.Console.Resources != nil {
		return resourcesOf("spec.console.resources", spec.Console.Resources)
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}, nil
}

// BuildConsole returns the console of the cluster owner with the given
// spec, running image (the operator's). It is built whether or not the
// console is enabled (see ConsoleEnabled).
func BuildConsole(owner resources.Owner, spec *redisv1alpha1.RedisEnterpriseClusterSpec, image string) (ConsoleChildren, error) {
	res, err := ConsoleResources(spec)
	if err != nil {
		return ConsoleChildren{}, err
	}
	name := ConsoleName(owner.Name)
	selector := ConsoleSelector(owner.Name)
	labels := resources.Labels(selector)
	tlsSecret := ConsoleTLSSecret(owner.Name, spec)
	return ConsoleChildren{
		ServiceAccount: corev1ac.ServiceAccount(name, owner.Namespace).
			WithLabels(labels).
			WithOwnerReferences(owner.Reference()),
		Role: rbacv1ac.Role(name, owner.Namespace).
			WithLabels(labels).
			WithOwnerReferences(owner.Reference()).
			WithRules(
				// The cluster itself: its spec and status, and its
				// annotations (a switchover, a backup now).
				rbacv1ac.PolicyRule().WithAPIGroups(redisv1alpha1.GroupVersion.Group).WithResources("redisenterpriseclusters").
					WithResourceNames(owner.Name).WithVerbs("get", "patch"),
				// The credentials the nodes take, and the TLS Secret
				// the pod mounts.
				rbacv1ac.PolicyRule().WithAPIGroups(corev1.GroupName).WithResources("secrets").
					WithResourceNames(owner.Name, tlsSecret).WithVerbs("get"),
			),
		RoleBinding: rbacv1ac.RoleBinding(name, owner.Namespace).
			WithLabels(labels).
			WithOwnerReferences(owner.Reference()).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(owner.Namespace)),
		Deployment: consoleDeployment(owner, image, tlsSecret, res, selector, labels),
	}, nil
}

// consoleDeployment is the console's one pod, restricted as the Pod
// Security Standards' restricted profile asks.
func consoleDeployment(owner resources.Owner, image, tlsSecret string, res corev1.ResourceRequirements, selector, labels map[string]string) *appsv1ac.DeploymentApplyConfiguration {
	name := ConsoleName(owner.Name)
	container := corev1ac.Container().
		WithName(ConsoleContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(ConsoleCommand).
		WithArgs("--namespace="+owner.Namespace, "--cluster="+owner.Name,
			"--ui-address=:8443", "--api-address=:9443",
			"--tls-cert-file="+ConsoleTLSDir+"/tls.crt", "--tls-key-file="+ConsoleTLSDir+"/tls.key").
		WithPorts(
			corev1ac.ContainerPort().WithName(UIPortName).WithContainerPort(UIPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(APIPortName).WithContainerPort(APIPort).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithScheme(corev1.URISchemeHTTPS).WithPath(ConsoleHealthPath).WithPort(intstr.FromString(UIPortName))).
			WithPeriodSeconds(5)).
		WithResources(resources.Convert[corev1ac.ResourceRequirementsApplyConfiguration](res)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(consoleTLSVolume).WithMountPath(ConsoleTLSDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(consoleTmpVolume).WithMountPath("/tmp")).
		WithSecurityContext(resources.ToolSecurity())
	pod := corev1ac.PodSpec().
		WithServiceAccountName(name).
		WithSecurityContext(resources.ToolPodSecurity()).
		WithContainers(container).
		WithVolumes(
			resources.TLSVolume(consoleTLSVolume, tlsSecret),
			corev1ac.Volume().WithName(consoleTmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse("16Mi"))))
	return appsv1ac.Deployment(name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(pod)))
}
