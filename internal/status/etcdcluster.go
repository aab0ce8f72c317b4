package status

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// EtcdView is what a pass of an EtcdCluster learnt from etcd and decided.
type EtcdView struct {
	// Observed is whether the pass read the cluster (its step ran).
	Observed bool
	// Members is the membership to record; nil keeps the recorded one.
	Members []etcdv1beta2.EtcdMember
	// ClusterID is the ID of the cluster the members belong to (hex);
	// empty keeps the recorded one.
	ClusterID string
	// Step is what the planner decided.
	Step EtcdStep
	// NoSpaceRemedy is the NOSPACE remedy to record (when Observed).
	NoSpaceRemedy *etcdv1beta2.NoSpaceRemedy
}

// EtcdStep is an EtcdCluster planner's decision, as the status reports it.
type EtcdStep struct {
	// Reason is the condition reason of the step, or of why the cluster
	// waits; empty once the cluster is at the spec.
	Reason string
	// Message says what the step does, or why the cluster waits.
	Message string
	// Failure: the cluster cannot go on (quorum lost, say).
	Failure bool
}

// done reports whether the cluster is at the spec.
func (s EtcdStep) done() bool { return s.Reason == "" }

// EtcdCluster sets the status of an EtcdCluster from what the pass read
// and decided, and the pass's failure (nil on success): a failure of the
// step (QuorumLost, ScaleInRefused, VersionSkew), of a child, or of a pod
// (an image that cannot be pulled is the version's: VersionUnavailable).
func EtcdCluster(st *etcdv1beta2.EtcdClusterStatus, generation int64, spec *etcdv1beta2.EtcdClusterSpec, selector string, view EtcdView, failure *conditions.Failure, now metav1.Time) {
	if view.Members != nil {
		st.Members = view.Members
	}
	if view.ClusterID != "" {
		st.ClusterID = view.ClusterID
	}
	if view.Observed {
		st.NoSpaceRemedy = view.NoSpaceRemedy
	}
	st.Size = int32(len(st.Members))
	st.Leader = ""
	versions := make([]string, 0, len(st.Members))
	for _, m := range st.Members {
		if m.Leader {
			st.Leader = m.Name
		}
		versions = append(versions, m.Version)
	}
	st.CurrentVersion = etcdv1beta2.LowestVersion(versions)
	st.TargetVersion = spec.Version
	st.Selector = selector
	if failure != nil && failure.Reason == conditions.ReasonImagePullFailed {
		failure = versionUnavailable(spec, failure)
	}
	if failure != nil && failure.Reason == conditions.ReasonReadinessProbeFailed {
		// etcd's own answer says which members are unhealthy (the
		// decision); a learner catching up is not ready either.
		failure = nil
	}
	d := view.Step
	healthy := true
	for _, m := range st.Members {
		healthy = healthy && m.Healthy
	}

	c := newTriple()
	switch {
	case failure != nil:
		c.failed(failure)
	case !view.Observed:
		say(&c.ready, metav1.ConditionFalse, etcdv1beta2.ReasonScaling, "Waiting for the members to be read")
	case !d.done() && d.Reason == etcdv1beta2.ReasonMemberUnhealthy:
		c.failed(&conditions.Failure{Reason: d.Reason, Message: d.Message})
	case !d.done():
		say(&c.ready, metav1.ConditionFalse, d.Reason, d.Message)
	case !healthy:
		say(&c.ready, metav1.ConditionFalse, etcdv1beta2.ReasonMemberUnhealthy, "A member is unhealthy")
	default:
		c.available(d.Message)
	}
	switch {
	case view.Observed && !d.done() && !d.Failure && d.Reason != etcdv1beta2.ReasonMemberUnhealthy:
		say(&c.progressing, metav1.ConditionTrue, d.Reason, d.Message)
	case c.ready.Status != metav1.ConditionTrue:
		say(&c.progressing, metav1.ConditionFalse, c.ready.Reason, "No change can be made: "+c.ready.Message)
	}
	c.set(&st.Conditions, generation, now)
	if view.Observed {
		st.ObservedGeneration = generation
	}
}

// versionUnavailable names the version whose image cannot be pulled.
func versionUnavailable(spec *etcdv1beta2.EtcdClusterSpec, f *conditions.Failure) *conditions.Failure {
	image := spec.Image(spec.Version)
	if !strings.Contains(f.Message, fmt.Sprintf("%q", image)) {
		return f
	}
	return &conditions.Failure{Reason: etcdv1beta2.ReasonVersionUnavailable, Message: fmt.Sprintf(
		"etcd version %s is not available: image %s cannot be pulled (%s)", spec.Version, image, f.Message)}
}
