// Package conditions names the status conditions and reasons that every
// app-operator kind reports, so that `kubectl wait --for=condition=Ready` and
// GitOps health checks work the same way for all of them.
package conditions

const (
	// Ready is True when every child exists as the spec asks and the workload
	// is available at the desired size for the current generation.
	Ready = "Ready"
	// Progressing is True while a change rolls out.
	Progressing = "Progressing"
	// Degraded is True when the operator cannot converge without help: a
	// rejected spec, a child owned by someone else, a stalled rollout.
	Degraded = "Degraded"
)

// Reasons. Each failure has its own, so alerts and scripts can tell them apart.
const (
	// ReasonAvailable: the workload is available at the desired size.
	ReasonAvailable = "Available"
	// ReasonRolloutInProgress: the Deployment is rolling out a change.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonRolloutComplete: the last change has rolled out.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected = "AsExpected"
	// ReasonProgressDeadlineExceeded: the Deployment stopped making progress.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonReplicaFailure: pods cannot be created (quota, admission).
	ReasonReplicaFailure = "ReplicaFailure"
	// ReasonChildConflict: a child with the name the operator needs exists
	// and is not controlled by this resource; the operator leaves it alone.
	ReasonChildConflict = "ChildConflict"
	// ReasonNodePortAllocated: the requested node port belongs to another Service.
	ReasonNodePortAllocated = "NodePortAllocated"
	// ReasonApplyRejected: the API server rejected a child; the message
	// carries the server's words.
	ReasonApplyRejected = "ApplyRejected"
	// ReasonApplyFailed: a child could not be applied for a transient reason
	// (the operator retries).
	ReasonApplyFailed = "ApplyFailed"
	// ReasonInvalidSpec: the spec cannot be turned into children.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonPodUnschedulable: the scheduler cannot place a pod; the message
	// gives the scheduler's reason.
	ReasonPodUnschedulable = "PodUnschedulable"
	// ReasonImagePullFailed: a pod's image cannot be pulled; the message
	// names the image.
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonContainerCannotStart: the kubelet cannot create or start a
	// container (a missing ConfigMap or Secret, say).
	ReasonContainerCannotStart = "ContainerCannotStart"
	// ReasonCrashLoopBackOff: a container keeps exiting, or its liveness
	// probe keeps failing; the message gives its last exit code and reason.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
	// ReasonReadinessProbeFailed: a container runs but has failed its
	// readiness probe for longer than the probe allows; the message names
	// the pod, the container and the probe.
	ReasonReadinessProbeFailed = "ReadinessProbeFailed"
	// ReasonStepFailed: a step against the application itself (a member
	// added, a primary elected) could not be taken or observed; retried.
	ReasonStepFailed = "StepFailed"
	// ReasonNodePortNotExposed: the Service does not (yet) expose the node
	// port the spec asks for.
	ReasonNodePortNotExposed = "NodePortNotExposed"
)

// Conditions of a MicroServiceDeploy beyond Ready, Progressing and Degraded.
const (
	// Idle is True while the instance is parked (spec.idle): no pods, no HPA.
	Idle = "Idle"
	// Exposed is True when the instance is reachable through its Ingress.
	Exposed = "Exposed"
	// QuotaReady is True when the namespace's ResourceQuota, kept by the
	// operator, counts the instance.
	QuotaReady = "QuotaReady"
)

// Reasons of the MicroServiceDeploy conditions.
const (
	// ReasonParked: spec.idle is true; the instance runs no pods.
	ReasonParked = "Parked"
	// ReasonActive: spec.idle is false.
	ReasonActive = "Active"
	// ReasonIngressApplied: the Ingress is applied; status.url is its address.
	ReasonIngressApplied = "IngressApplied"
	// ReasonNoBaseDomain: the operator has no base domain, so it exposes nothing.
	ReasonNoBaseDomain = "NoBaseDomain"
	// ReasonAuthUnavailable: spec.needAuth is true but the operator has no
	// external authentication endpoint; the instance is not exposed.
	ReasonAuthUnavailable = "AuthUnavailable"
	// ReasonHostConflict: another MicroServiceDeploy, older or first by
	// namespace/name, holds the host this instance wants; the instance runs
	// but is not exposed.
	ReasonHostConflict = "HostConflict"
	// ReasonQuotaApplied: the namespace's quota counts the instance.
	ReasonQuotaApplied = "QuotaApplied"
	// ReasonQuotaPending: the namespace's quota does not count the instance yet.
	ReasonQuotaPending = "QuotaPending"
	// ReasonQuotaConflict: a ResourceQuota of the name the operator needs
	// exists and was not created by it; the operator leaves it alone.
	ReasonQuotaConflict = "QuotaConflict"
)
