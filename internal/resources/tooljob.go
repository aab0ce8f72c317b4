package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// toolUserID is the user and group a backup tool runs as: nobody's.
const toolUserID = 65532

// ToolSecurity is the security context of a backup tool's container: no
// privilege, a read-only root, every capability dropped.
func ToolSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithRunAsNonRoot(true).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// ToolPodSecurity is the security context of a pod of the operator's
// image (a backup tool's, the console's): it runs as nobody, with the
// runtime's default seccomp profile.
func ToolPodSecurity() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(toolUserID).WithRunAsGroup(toolUserID).WithFSGroup(toolUserID).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// ToolJob describes a Job that runs a backup tool's container once: the
// tool writes what it did as its termination message, a failure it knows
// is permanent (its exit code PermanentExit) fails the Job at once, and
// any other is retried Retries times within Timeout seconds.
type ToolJob struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// Container is the tool's container; ToolJob adds its small requests
	// and its security context.
	Container     *corev1ac.ContainerApplyConfiguration
	Volumes       []*corev1ac.VolumeApplyConfiguration
	Timeout       int64
	Retries       int32
	PermanentExit int32
}

// Build returns the Job, owned by owner. The pod runs as nobody, without a
// service account token.
func (j ToolJob) Build(owner Owner) (*batchv1ac.JobApplyConfiguration, *corev1ac.PodSpecApplyConfiguration) {
	j.Container.
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")})).
		WithSecurityContext(ToolSecurity())
	pod := corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(ToolPodSecurity()).
		WithContainers(j.Container).
		WithVolumes(j.Volumes...)
	job := batchv1ac.Job(j.Name, owner.Namespace).
		WithLabels(j.Labels).
		WithAnnotations(j.Annotations).
		WithOwnerReferences(owner.Reference()).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(j.Retries).
			WithActiveDeadlineSeconds(j.Timeout).
			WithPodFailurePolicy(batchv1ac.PodFailurePolicy().WithRules(
				batchv1ac.PodFailurePolicyRule().
					WithAction("FailJob").
					WithOnExitCodes(batchv1ac.PodFailurePolicyOnExitCodesRequirement().
						WithContainerName(*j.Container.Name).
						WithOperator("In").
						WithValues(j.PermanentExit)))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(j.Labels).
				WithSpec(pod)))
	return job, pod
}
