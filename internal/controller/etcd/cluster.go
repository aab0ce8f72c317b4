package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/app-operator/app-operator/internal/backup"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/controller/stateful"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// An upgrade sets the image of one member's pod at a time; the pod of a
// member that joins late is deleted, to start again at once.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch;delete
// The claims tell a member's data (the StatefulSet makes them; see
// internal/controller/stateful for the one the operator deletes).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch

// Timeouts of the calls to etcd: a pass never waits long on a member that
// does not answer.
const (
	etcdCallTimeout = 3 * time.Second
	// etcdStepBudget bounds the observation of the members (the status
	// calls and member lists, in parallel), and then the one change a step
	// makes.
	etcdStepBudget = 12 * time.Second
	// etcdRecheck is how often a cluster at its spec is looked at: etcd's
	// health changes without an event the operator watches.
	etcdRecheck = 15 * time.Second
)

// ClusterKind reconciles EtcdCluster in the phases of a data service
// (see engine.Phases): it prepares the certificates of spec.TLS, observes
// the members through etcd's API and the live StatefulSet, which the
// children are sized from, and, after the apply, takes one membership step
// at a time (see etcdcluster.Next).
func ClusterKind(opts Options) engine.Kind[*etcdv1beta2.EtcdCluster] {
	gvk := etcdv1beta2.GroupVersion.WithKind("EtcdCluster")
	dial := opts.Dial
	if dial == nil {
		dial = etcd.Dial
	}
	// The planner needs the time: the join timeout and the restart of a
	// server behind its stage count from it.
	var clk clock.PassiveClock = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
	}
	ops := &etcdOps{dial: dial, dialers: &etcdTLSDialers{}, clock: clk, joinTimeout: opts.JoinTimeout}
	snapshotImage := cmp.Or(opts.SnapshotImage, backup.DefaultSnapshotImage)
	gauges := newEtcdGauges(opts.Metrics)
	k := engine.Kind[*etcdv1beta2.EtcdCluster]{
		Name: etcdcluster.KindName,
		GVK:  gvk,
		New:  func() *etcdv1beta2.EtcdCluster { return &etcdv1beta2.EtcdCluster{} },
		Owns: []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}},
		// Fewer than two members need no PodDisruptionBudget.
		Prunes: []client.Object{&policyv1.PodDisruptionBudget{}},
		Forget: func(key client.ObjectKey) {
			gauges.forget(key)
			ops.dialers.forget(key)
		},
		WakeOn: []string{switchover.Annotation},
	}
	return engine.Phases[*etcdv1beta2.EtcdCluster, etcdPrepared, etcdObservation, *etcdcluster.Decision, etcdActed]{
		Prepare: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdCluster) (etcdPrepared, error) {
			return ops.with(c).prepare(ctx, o)
		},
		Observe: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdCluster, prepared etcdPrepared) (etcdObservation, error) {
			seen, err := ops.with(c).observe(ctx, o, prepared)
			if err == nil {
				gauges.record(client.ObjectKeyFromObject(o), etcdSampleOf(&o.Spec, seen.obs))
			}
			return seen, err
		},
		Build: func(o *etcdv1beta2.EtcdCluster, pass *etcdPass) ([]runtime.ApplyConfiguration, error) {
			if f := etcdcluster.Unsupported(&o.Spec); f != nil {
				return nil, f
			}
			if f := pass.Prepared.tlsFailure; f != nil {
				return nil, f
			}
			return etcdcluster.Build(resources.OwnerOf(o, gvk), &o.Spec, etcdMembership(o, pass, snapshotImage)).Objects(), nil
		},
		Plan: func(o *etcdv1beta2.EtcdCluster, pass *etcdPass, _ engine.Observed, scope engine.Scope) *etcdcluster.Decision {
			// Every step of an etcd cluster moves it toward its spec
			// (membership, version); none is taken while a child is not
			// as the spec wants.
			if scope == engine.SafetySteps || o.Spec.Hibernate {
				// Hibernated: no step at all (see hibernationStep).
				return nil
			}
			d := etcdcluster.Next(&o.Spec, o.Namespace, pass.Observed.obs)
			return &d
		},
		Act: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdCluster, pass *etcdPass) (etcdActed, engine.Step, error) {
			if o.Spec.Hibernate {
				return etcdActed{}, hibernationStep(pass.Observed.pods), nil
			}
			if pass.Decision == nil {
				return etcdActed{}, engine.Step{}, nil
			}
			budget := etcdStepBudget
			if isUpkeep(pass.Decision.Action.Kind) {
				budget = etcdUpkeepBudget
			}
			ctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			acted, s, err := ops.with(c).act(ctx, o, pass.Prepared, &pass.Observed, *pass.Decision)
			if err != nil || s.Failure != nil {
				return acted, s, err
			}
			acted.growth, s, err = growClaims(ctx, c, o, s)
			return acted, s, err
		},
		SetStatus: func(o *etcdv1beta2.EtcdCluster, pass *etcdPass, report engine.Report, now metav1.Time) {
			selector := labels.SelectorFromSet(etcdcluster.Selector(o.Name)).String()
			if o.Spec.Hibernate && pass.Began {
				status.EtcdHibernated(&o.Status, o.Generation, &o.Spec, selector, pass.Observed.pods, report.Failure, now)
				return
			}
			status.EtcdCluster(&o.Status, o.Generation, &o.Spec, selector, etcdView(pass), report.Failure, now)
			if rec := pass.Result.switchover; rec != nil {
				o.Status.LastSwitchover = rec
			} else if pass.Planned && pass.Observed.obs.Reachable {
				o.Status.LastSwitchover = finishMove(o.Status.LastSwitchover, leaderOf(pass.Observed.obs))
			}
			status.Switchover(&o.Status.Conditions, o.Status.LastSwitchover, o.Generation, now)
			stateful.SetGrowthCondition(&o.Status.Conditions, o.Generation, pass.Result.growth, now)
		},
	}.With(k)
}

// etcdPass is the record of an EtcdCluster's pass.
type etcdPass = engine.PassOf[etcdPrepared, etcdObservation, *etcdcluster.Decision, etcdActed]

// etcdMembership is the membership the children are built from: what the
// pass observed (see etcdcluster.MembershipOf); without a cluster (a
// preview), status.members. A cluster of spec.restore that has never
// started (no cluster ID recorded or seen) restores its first member
// from the snapshot with the tool of image. The start-up files are those
// the step the planner names needs (see etcdcluster.ConfigStages), written
// before the step is taken.
func etcdMembership(o *etcdv1beta2.EtcdCluster, pass *etcdPass, image string) etcdcluster.Membership {
	seen := &pass.Observed
	var m etcdcluster.Membership
	if pass.Began {
		m = etcdcluster.MembershipOf(seen.obs, seen.live)
	} else {
		m = etcdcluster.FromStatus(o.Name, o.Status.Members)
	}
	if o.Spec.Restore != nil && o.Status.ClusterID == "" && (!pass.Began || seen.clusterID == 0) {
		m.Restore = &etcdcluster.Restore{Image: image, Source: *o.Spec.Restore}
	}
	if pass.Began {
		stages := etcdcluster.ConfigStages(&o.Spec, seen.obs, seen.live, etcdcluster.Next(&o.Spec, o.Namespace, seen.obs))
		m.Stages, m.Trust = &stages, seen.obs.Trust
	}
	return m
}

// etcdView is what the status reports of the members: what the pass
// observed, the planner decided and the step changed; zero when no step
// was planned.
func etcdView(pass *etcdPass) status.EtcdView {
	if !pass.Planned || pass.Decision == nil {
		return status.EtcdView{}
	}
	seen, acted := &pass.Observed, pass.Result
	d := pass.Decision
	view := status.EtcdView{Observed: true, Step: status.EtcdStep{Reason: d.Reason, Message: d.Message, Failure: d.Failure}}
	if seen.clusterID != 0 {
		view.ClusterID = strconv.FormatUint(seen.clusterID, 16)
	}
	if seen.obs.Reachable {
		view.Members = etcdcluster.Record(seen.obs, seen.obs.Members)
	}
	if acted.waiting != "" {
		view.Step.Message = acted.waiting
	}
	if acted.members != nil {
		view.Members = acted.members
	}
	view.NoSpaceRemedy = etcdcluster.RemedyRecord(seen.obs)
	if acted.remedySet {
		view.NoSpaceRemedy = acted.remedy
	}
	return view
}

// etcdPrepared is what a pass of an EtcdCluster makes before it reads:
// with TLS, the issued certificates, and the dialer of the operator's.
type etcdPrepared struct {
	// dial reaches the members: with TLS, with the operator Secret's
	// certificate.
	dial  etcd.Dialer
	trust etcdcluster.Trust
	// tlsFailure, when set, says which Secret of spec.TLS cannot serve;
	// the pass applies nothing and reaches no member.
	tlsFailure *conditions.Failure
}

// etcdObservation is what a pass read of an EtcdCluster: the planner's
// observation, the client URL of each member pod, the live StatefulSet
// and start-up files, and the cluster's ID.
type etcdObservation struct {
	// request is the switchover request not yet handled ("" when none
	// is); obs.Switchover its target.
	request   string
	obs       etcdcluster.Observed
	urls      map[string]string
	live      etcdcluster.Live
	clusterID uint64
	// pods is how many member pods exist, terminating or not.
	pods int
}

// etcdActed is what a step did: the membership to record when it changed
// it (nil otherwise), or why it waits instead (a learner that has not
// caught up).
type etcdActed struct {
	members []etcdv1beta2.EtcdMember
	waiting string
	// switchover is the outcome of the switchover request the step
	// answered (nil when it answered none).
	switchover *switchover.Status
	// growth is the step taken toward spec.storage's size (see
	// stateful.GrowClaims); nil when none was looked at.
	growth *resources.ClaimGrowth
	// remedy is the NOSPACE remedy to record when remedySet: the
	// compaction a step made, or none once the alarm is disarmed.
	remedy    *etcdv1beta2.NoSpaceRemedy
	remedySet bool
}

// growClaims grows the members' claims toward spec.storage's size, one at
// a time, beside the membership step s, and comes back soon while one
// grows.
func growClaims(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdCluster, s engine.Step) (*resources.ClaimGrowth, engine.Step, error) {
	claims := stateful.Claims{Namespace: o.Namespace, StatefulSet: o.Name, Volume: etcdcluster.DataVolume,
		Selector: resources.Labels(etcdcluster.Selector(o.Name))}
	g, err := stateful.GrowClaims(ctx, c.Client, c.API, claims, o.Spec.StorageSize())
	if err != nil {
		return nil, s, err
	}
	if g.Expanding() && (s.RequeueAfter == 0 || s.RequeueAfter > stateful.GrowthInterval) {
		s.RequeueAfter = stateful.GrowthInterval
	}
	return &g, s, nil
}

// etcdOps looks at an EtcdCluster's members and performs its steps.
type etcdOps struct {
	client client.Client
	// api reads without the cache what the operator does not watch.
	api client.Reader
	// dial reaches the members of a cluster without TLS; dialers, those
	// of a cluster with TLS.
	dial    etcd.Dialer
	dialers *etcdTLSDialers
	clock   interface{ Now() time.Time }
	// joinTimeout is the planner's JoinTimeout (its default when zero).
	joinTimeout time.Duration
}

// with returns the ops of one pass, with its clients.
func (e *etcdOps) with(c engine.Clients) *etcdOps {
	pass := *e
	pass.client, pass.api = c.Client, c.API
	return &pass
}

// prepare issues the certificates spec.TLS asks for and reads the
// operator's (see tlsDialer).
func (e *etcdOps) prepare(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcdPrepared, error) {
	prepared := etcdPrepared{dial: e.dial}
	if !o.Spec.TLSEnabled() {
		return prepared, nil
	}
	dial, trust, err := e.tlsDialer(ctx, o)
	if f, ok := errors.AsType[*conditions.Failure](err); ok {
		prepared.tlsFailure = f
		return prepared, nil
	}
	if err != nil {
		return prepared, err
	}
	prepared.dial, prepared.trust = dial, trust
	return prepared, nil
}

// observe reads the live StatefulSet and ConfigMap, which the children
// are sized from, and the members (see observeMembers); a cluster whose
// TLS Secrets cannot serve is not reached.
func (e *etcdOps) observe(ctx context.Context, o *etcdv1beta2.EtcdCluster, prepared etcdPrepared) (etcdObservation, error) {
	var seen etcdObservation
	sts := &appsv1.StatefulSet{}
	switch err := e.client.Get(ctx, client.ObjectKeyFromObject(o), sts); {
	case err == nil:
		seen.live.Replicas = sts.Spec.Replicas
		seen.live.ClaimSize = resources.TemplateClaimSize(sts, etcdcluster.DataVolume)
	case !apierrors.IsNotFound(err):
		return seen, fmt.Errorf("get StatefulSet %s: %w", o.Name, err)
	}
	cm := &corev1.ConfigMap{}
	switch err := e.client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: etcdcluster.ConfigMapName(o.Name)}, cm); {
	case err == nil:
		seen.live.Files = cm.Data
		// The token of a ConfigMap another EtcdCluster of the name left
		// behind is not this cluster's: it forms with its own.
		if metav1.IsControlledBy(cm, o) {
			seen.live.Token = etcdcluster.TokenOf(cm.Data)
		}
	case !apierrors.IsNotFound(err):
		return seen, fmt.Errorf("get ConfigMap %s: %w", etcdcluster.ConfigMapName(o.Name), err)
	}
	if prepared.tlsFailure != nil {
		return seen, nil
	}
	e.dial = prepared.dial
	ctx, cancel := context.WithTimeout(ctx, etcdStepBudget)
	defer cancel()
	var err error
	seen.obs, seen.urls, seen.clusterID, err = e.observeMembers(ctx, o)
	if err == nil && o.Spec.Hibernate {
		seen.pods, err = e.countPods(ctx, o)
	}
	seen.obs.Trust = prepared.trust
	seen.request, seen.obs.Switchover = switchover.Pending(o.Annotations, o.Status.LastSwitchover)
	return seen, err
}

// act takes the planner's step d, and says what the pass reports of it.
func (e *etcdOps) act(ctx context.Context, o *etcdv1beta2.EtcdCluster, prepared etcdPrepared, seen *etcdObservation, d etcdcluster.Decision) (etcdActed, engine.Step, error) {
	e.dial = prepared.dial
	now := metav1.NewTime(e.clock.Now())
	refused, notice := refusedMove(seen.request, d, leaderOf(seen.obs), now)
	s := engine.Step{Notices: notice}
	switch {
	case d.Failure:
		s.Failure = &conditions.Failure{Reason: d.Reason, Message: d.Message}
		return etcdActed{switchover: refused}, s, nil
	case d.Done() && d.Action.Kind == etcdcluster.None:
		s.RequeueAfter = etcdRecheck
		return etcdActed{switchover: refused}, s, nil
	case d.Action.Kind == etcdcluster.None:
		s.Waiting = d.Message
		return etcdActed{switchover: refused}, s, nil
	case isUpkeep(d.Action.Kind):
		acted, err := e.upkeep(ctx, seen, d.Action)
		if err != nil {
			return etcdActed{}, engine.Step{}, fmt.Errorf("%s: %w", d.Message, err)
		}
		acted.switchover = refused
		s.Took, s.Event = d.Message, etcdStepEvent(d.Action.Kind)
		return acted, s, nil
	}
	var moved *switchover.Status
	if d.Switchover {
		claimed, err := e.claimMove(ctx, o, seen.request, d, now)
		if err != nil {
			return etcdActed{}, engine.Step{}, err
		}
		moved = ptr.To(*claimed)
		moved.Outcome, moved.Message = switchover.Done, fmt.Sprintf("Moved the leadership to %s", d.Action.Member)
	}
	members, waiting, err := e.change(ctx, o, seen.obs, seen.urls, d.Action)
	if err != nil {
		return etcdActed{}, engine.Step{}, fmt.Errorf("%s: %w", d.Message, err)
	}
	if waiting != "" {
		s.Waiting = waiting
	} else {
		s.Took, s.Event = d.Message, etcdStepEvent(d.Action.Kind)
	}
	return etcdActed{members: members, waiting: waiting, switchover: moved}, s, nil
}

// observeMembers reads the member pods and their claims from the cache and,
// through the pods' IPs (the operator does not rely on cluster DNS), the
// members etcd reports and each one's health. urls maps a member name to
// its client URL; clusterID is the cluster the members counted belong to.
func (e *etcdOps) observeMembers(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcdcluster.Observed, map[string]string, uint64, error) {
	obs := etcdcluster.Observed{Cluster: o.Name, Recorded: o.Status.Members, Remedy: o.Status.NoSpaceRemedy, Pods: map[string]etcdcluster.Pod{}, Claims: map[string]string{}, JoinTimeout: e.joinTimeout}
	if e.clock != nil {
		obs.Now = e.clock.Now()
	}
	selector := client.MatchingLabels(resources.Labels(etcdcluster.Selector(o.Name)))
	pods := &corev1.PodList{}
	if err := e.client.List(ctx, pods, client.InNamespace(o.Namespace), selector); err != nil {
		return obs, nil, 0, fmt.Errorf("list pods: %w", err)
	}
	claimList := &corev1.PersistentVolumeClaimList{}
	if err := e.client.List(ctx, claimList, client.InNamespace(o.Namespace), selector); err != nil {
		return obs, nil, 0, fmt.Errorf("list claims: %w", err)
	}
	claimCreated := map[string]time.Time{}
	for _, c := range claimList.Items {
		obs.Claims[c.Name] = string(c.UID)
		claimCreated[c.Name] = c.CreationTimestamp.Time
	}
	urls := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		pod := etcdcluster.PodOf(&p, obs.Claims[etcdcluster.ClaimName(p.Name)])
		pod.Created = p.CreationTimestamp.Time
		if pod.ClaimUID != "" {
			pod.ClaimCreated = claimCreated[etcdcluster.ClaimName(p.Name)]
		}
		_, why, err := stateful.StrandedClaim(ctx, e.api, &p)
		if err != nil {
			return obs, nil, 0, err
		}
		pod.Stranded = why
		if pod.Ready && p.Spec.NodeName != "" {
			// A pod on a node that no longer reports keeps the Ready it had.
			notReady, err := stateful.NodeNotReady(ctx, e.client, p.Spec.NodeName)
			if err != nil {
				return obs, nil, 0, fmt.Errorf("get node %s: %w", p.Spec.NodeName, err)
			}
			pod.Ready = !notReady
		}
		obs.Pods[p.Name] = pod
		if p.Status.PodIP != "" {
			// A pod with the certificates mounted serves https (and, on
			// the way to TLS, http too); one without, http alone.
			scheme := etcdcluster.HTTP
			if pod.TLS {
				scheme = etcdcluster.HTTPS
			}
			urls[p.Name] = string(scheme) + "://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdcluster.ClientPort))
		}
	}
	recorded, _ := strconv.ParseUint(o.Status.ClusterID, 16, 64)
	m := askMembers(ctx, e.dial, o.Name, o.Namespace, urls, recorded)
	obs.Reachable, obs.Members, obs.FromLeader, obs.Foreign = m.reachable, m.members, m.fromLeader, m.foreign
	return obs, urls, m.clusterID, nil
}

// memberAnswers is what askMembers made of the members' answers.
type memberAnswers struct {
	reachable  bool
	members    []etcdcluster.Member
	fromLeader bool
	clusterID  uint64
	// foreign names the pods that answered as members of another cluster,
	// or as another member than their own.
	foreign []string
}

// askMembers asks each member pod (urls: pod name to client URL) for its
// status and member list (etcd.Ask, which says which answers count), and
// makes of the view the planner's members: the leader's list, each with
// what its own pod said.
func askMembers(ctx context.Context, dial etcd.Dialer, cluster, namespace string, urls map[string]string, recorded uint64) memberAnswers {
	podOf := func(peerURL string) (string, bool) { return etcdcluster.MemberOfPeerURL(cluster, namespace, peerURL) }
	v := etcd.Ask(ctx, dial, urls, recorded, podOf, etcdCallTimeout)
	out := memberAnswers{reachable: v.Reachable, fromLeader: v.FromLeader, clusterID: v.ClusterID, foreign: v.Foreign}
	for _, m := range v.Members {
		member := etcdcluster.Member{ID: m.ID, Name: m.Pod, Started: m.Name != "", Learner: m.IsLearner, Leader: m.Leader,
			PeerTLS: etcdcluster.PeerTLS(m.PeerURLs), Serving: etcdcluster.ServingStage(m.PeerURLs, m.ClientURLs)}
		if st := m.Status; st != nil {
			member.Version = st.Version
			member.Revision, member.DBSize, member.DBSizeInUse = st.Revision, st.DBSize, st.DBSizeInUse
			member.Healthy = st.Leader != 0 && len(st.Errors) == 0
			for _, a := range st.Alarms {
				member.Alarms = append(member.Alarms, etcdcluster.Alarm{Name: a.Name, Member: a.MemberID})
			}
		}
		out.members = append(out.members, member)
	}
	return out
}

// change takes the planner's action. It returns the membership to record
// when the action changed it (nil otherwise), or why it waits instead
// (a learner that has not caught up).
func (e *etcdOps) change(ctx context.Context, o *etcdv1beta2.EtcdCluster, obs etcdcluster.Observed, urls map[string]string, a etcdcluster.Action) ([]etcdv1beta2.EtcdMember, string, error) {
	switch a.Kind {
	case etcdcluster.Seed:
		return []etcdv1beta2.EtcdMember{{Name: a.Member}}, "", nil
	case etcdcluster.Upgrade:
		return nil, "", e.setImage(ctx, o.Namespace, a.Member, a.Image)
	case etcdcluster.RestartPod:
		return evicted(stateful.EvictPodOfUID(ctx, e.client, o.Namespace, a.Member, types.UID(a.PodUID)))
	case etcdcluster.SecurePeer:
		// The member's start-up file is at Secure already (applied by
		// this pass); its pod restarts from it once its URL has moved.
		if _, waiting, err := changeMembership(ctx, e.dial, obs, urls, a); err != nil || waiting != "" {
			return nil, waiting, err
		}
		return evicted(stateful.EvictPodOfUID(ctx, e.client, o.Namespace, a.Member, types.UID(a.PodUID)))
	case etcdcluster.ReplaceVolume:
		return nil, "", stateful.DeleteStranded(ctx, e.client, o.Namespace, etcdcluster.ClaimName(a.Member), a.ClaimUID, a.Member, a.PodUID)
	}
	return changeMembership(ctx, e.dial, obs, urls, a)
}

// changeMembership makes the membership change a, through the members
// that can take it: the leader for a move of the leadership, else the
// healthy voters (learners refuse membership changes).
func changeMembership(ctx context.Context, dial etcd.Dialer, obs etcdcluster.Observed, urls map[string]string, a etcdcluster.Action) ([]etcdv1beta2.EtcdMember, string, error) {
	var endpoints []string
	for _, m := range obs.Members {
		url, ok := urls[m.Name]
		switch {
		case !ok:
		case a.Kind == etcdcluster.MoveLeader && m.Leader:
			endpoints = append(endpoints[:0], url)
		case a.Kind != etcdcluster.MoveLeader && m.Healthy && !m.Learner:
			endpoints = append(endpoints, url)
		}
	}
	if len(endpoints) == 0 {
		return nil, "", errors.New("no healthy member to send the change to")
	}
	cli, err := dial(ctx, endpoints)
	if err != nil {
		return nil, "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	members := obs.Members
	switch a.Kind {
	case etcdcluster.AddLearner:
		added, err := cli.AddMember(ctx, a.PeerURL, true)
		if errors.Is(err, etcd.ErrNotReady) {
			return nil, "Waiting for the members to settle: etcd adds a member only once every voting member has been connected for 5 s", nil
		}
		if err != nil {
			return nil, "", err
		}
		members = append(slices.Clone(members), etcdcluster.Member{ID: added.ID, Name: a.Member, Learner: added.IsLearner})
	case etcdcluster.Promote:
		if err := cli.PromoteMember(ctx, a.ID); err != nil {
			if errors.Is(err, etcd.ErrNotReady) {
				return nil, fmt.Sprintf("Learner %s is catching up with the leader", a.Member), nil
			}
			return nil, "", err
		}
		return nil, "", nil
	case etcdcluster.Remove:
		err := cli.RemoveMember(ctx, a.ID)
		if errors.Is(err, etcd.ErrNotReady) {
			return nil, fmt.Sprintf("Waiting for the members to settle before removing %s", a.Member), nil
		}
		if err != nil {
			return nil, "", err
		}
		members = slices.DeleteFunc(slices.Clone(members), func(m etcdcluster.Member) bool { return m.ID == a.ID })
	case etcdcluster.MoveLeader:
		return nil, "", cli.MoveLeader(ctx, a.ID)
	case etcdcluster.SecurePeer:
		err := cli.UpdateMember(ctx, a.ID, []string{a.PeerURL})
		if errors.Is(err, etcd.ErrNotReady) {
			return nil, fmt.Sprintf("Waiting for the members to settle before moving %s to TLS", a.Member), nil
		}
		return nil, "", err
	default:
		return nil, "", fmt.Errorf("unknown action %q", a.Kind)
	}
	return etcdcluster.Record(obs, members), "", nil
}

// setImage sets the image of a member pod's etcd container. The kubelet
// restarts the container with the new image and the pod's data.
func (e *etcdOps) setImage(ctx context.Context, namespace, pod, image string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []map[string]string{{"name": etcdcluster.ContainerName, "image": image}}}})
	if err != nil {
		return err
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod}}
	if err := e.client.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("set the image of pod %s: %w", pod, err)
	}
	return nil
}

// evicted is change's answer to the removal of a member's pod: the
// refusal of its eviction by its budget is a wait (the step is tried
// again); other errors stay errors.
func evicted(err error) ([]etcdv1beta2.EtcdMember, string, error) {
	if errors.Is(err, stateful.ErrDisruptionRefused) {
		return nil, "Waiting to restart the member's pod: " + stateful.ErrDisruptionRefused.Error(), nil
	}
	return nil, "", err
}
