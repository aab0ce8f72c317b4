package status

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
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
	// Decision is the planner's decision; its reason is empty once the
	// cluster is at the spec.
	Decision etcdcluster.Decision
}

// EtcdCluster sets the status of an EtcdCluster from what the pass read
// and decided, and the pass's failure (nil on success): a failure of the
// step (QuorumLost, ScaleInRefused, VersionSkew), of a child, or of a pod
// (an image that cannot be pulled is the version's: VersionUnavailable).
func EtcdCluster(st *etcdv1beta2.EtcdClusterStatus, generation int64, spec *etcdv1beta2.EtcdClusterSpec, selector string, view EtcdView, failure *Failure, now metav1.Time) {
	if view.Members != nil {
		st.Members = view.Members
	}
	if view.ClusterID != "" {
		st.ClusterID = view.ClusterID
	}
	st.Size = int32(len(st.Members))
	st.Leader = ""
	members := make([]etcdcluster.Member, 0, len(st.Members))
	for _, m := range st.Members {
		if m.Leader {
			st.Leader = m.Name
		}
		members = append(members, etcdcluster.Member{Version: m.Version})
	}
	st.CurrentVersion = etcdcluster.LowestVersion(members)
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
	d := view.Decision
	healthy := true
	for _, m := range st.Members {
		healthy = healthy && m.Healthy
	}

	c := newTriple()
	switch {
	case failure != nil:
		c.failed(failure)
	case !view.Observed:
		say(&c.ready, metav1.ConditionFalse, etcdcluster.ReasonScaling, "Waiting for the members to be read")
	case !d.Done() && d.Reason == etcdcluster.ReasonMemberUnhealthy:
		c.failed(&Failure{Reason: d.Reason, Message: d.Message})
	case !d.Done():
		say(&c.ready, metav1.ConditionFalse, d.Reason, d.Message)
	case !healthy:
		say(&c.ready, metav1.ConditionFalse, etcdcluster.ReasonMemberUnhealthy, "A member is unhealthy")
	default:
		c.available(d.Message)
	}
	switch {
	case view.Observed && !d.Done() && !d.Failure && d.Reason != etcdcluster.ReasonMemberUnhealthy:
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
func versionUnavailable(spec *etcdv1beta2.EtcdClusterSpec, f *Failure) *Failure {
	image := etcdcluster.Image(spec, spec.Version)
	if !strings.Contains(f.Message, fmt.Sprintf("%q", image)) {
		return f
	}
	return &Failure{Reason: etcdcluster.ReasonVersionUnavailable, Message: fmt.Sprintf(
		"etcd version %s is not available: image %s cannot be pulled (%s)", spec.Version, image, f.Message)}
}
