package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
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
// strandedvolume.go for the one the operator deletes).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch

// Timeouts of the calls to etcd: a pass never waits long on a member that
// does not answer.
const (
	etcdCallTimeout = 3 * time.Second
	// etcdStepBudget bounds the look at the members (the status calls and
	// member lists, in parallel), and then the one change a step makes.
	etcdStepBudget = 12 * time.Second
	// etcdRecheck is how often a cluster at its spec is looked at: etcd's
	// health changes without an event the operator watches.
	etcdRecheck = 15 * time.Second
)

// etcdClusterKind reconciles EtcdCluster: before the build, a look at the
// members through etcd's API and at the live StatefulSet, which the
// children are sized from; after the apply, one membership step at a time
// (see etcdcluster.Next).
func etcdClusterKind(opts Options) kind[*etcdv1beta2.EtcdCluster] {
	return etcdClusterKindWith(opts, etcd.Dial)
}

// etcdClusterKindWith is etcdClusterKind reaching the members through dial.
func etcdClusterKindWith(opts Options, dial etcd.Dialer) kind[*etcdv1beta2.EtcdCluster] {
	gvk := etcdv1beta2.GroupVersion.WithKind("EtcdCluster")
	ops := &etcdOps{dial: dial, dialers: &etcdTLSDialers{}, clock: opts.Clock, joinTimeout: opts.EtcdJoinTimeout}
	snapshotImage := cmp.Or(opts.SnapshotImage, DefaultSnapshotImage)
	gauges := newEtcdGauges(opts.Metrics)
	k := kind[*etcdv1beta2.EtcdCluster]{
		name:      etcdcluster.KindName,
		gvk:       gvk,
		newObject: func() *etcdv1beta2.EtcdCluster { return &etcdv1beta2.EtcdCluster{} },
		owns:      []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}},
		// Fewer than two members need no PodDisruptionBudget.
		prunes: []client.Object{&policyv1.PodDisruptionBudget{}},
		forget: func(key client.ObjectKey) {
			gauges.forget(key)
			ops.dialers.forget(key)
		},
	}
	return stepKind[*etcdv1beta2.EtcdCluster, etcdLook]{
		look: func(ctx context.Context, c clients, o *etcdv1beta2.EtcdCluster) (etcdLook, error) {
			look, err := ops.with(c).look(ctx, o)
			if err == nil {
				gauges.record(client.ObjectKeyFromObject(o), etcdSampleOf(&o.Spec, look.obs))
			}
			return look, err
		},
		build: func(o *etcdv1beta2.EtcdCluster, look *etcdLook) ([]runtime.ApplyConfiguration, error) {
			if look != nil && look.tlsFailure != nil {
				return nil, look.tlsFailure
			}
			return etcdcluster.Build(resources.OwnerOf(o, gvk), &o.Spec, etcdMembership(o, look, snapshotImage)).Objects(), nil
		},
		step: func(ctx context.Context, c clients, o *etcdv1beta2.EtcdCluster, look *etcdLook, _ observed, scope stepScope) (Step, error) {
			// Every step of an etcd cluster moves it toward its spec
			// (membership, version); none is taken while a child is not
			// as the spec wants.
			if scope == safetySteps {
				return Step{}, nil
			}
			ctx, cancel := context.WithTimeout(ctx, etcdStepBudget)
			defer cancel()
			return ops.with(c).decide(ctx, o, look)
		},
		setStatus: func(o *etcdv1beta2.EtcdCluster, look *etcdLook, pass report, now metav1.Time) {
			var view status.EtcdView
			if look != nil {
				view = look.view
			}
			selector := labels.SelectorFromSet(etcdcluster.Selector(o.Name)).String()
			status.EtcdCluster(&o.Status, o.Generation, &o.Spec, selector, view, pass.failure, now)
		},
	}.with(k)
}

// etcdMembership is the membership the children are built from: what the
// pass's look found (see etcdcluster.MembershipOf); without a cluster (a
// preview), status.members. A cluster of spec.restore that has never
// started (no cluster ID recorded or seen) restores its first member
// from the snapshot with the tool of image.
func etcdMembership(o *etcdv1beta2.EtcdCluster, look *etcdLook, image string) etcdcluster.Membership {
	var m etcdcluster.Membership
	if look != nil {
		m = etcdcluster.MembershipOf(look.obs, look.live)
	} else {
		m = etcdcluster.FromStatus(o.Name, o.Status.Members)
	}
	if o.Spec.Restore != nil && o.Status.ClusterID == "" && (look == nil || look.clusterID == 0) {
		m.Restore = &etcdcluster.Restore{Image: image, Source: *o.Spec.Restore}
	}
	if look != nil {
		stages := etcdcluster.ConfigStages(&o.Spec, look.obs, look.live, look.decision)
		m.Stages, m.Trust = &stages, look.obs.Trust
	}
	return m
}

// etcdLook is what a pass read of an EtcdCluster before the build (the
// planner's observation, the client URL of each member pod, the live
// StatefulSet and start-up files, the cluster's ID), and what its step
// then decided (view, for the status; zero when no step ran).
type etcdLook struct {
	obs etcdcluster.Observed
	// decision is the planner's for obs: the build writes the start-up
	// files the step it names needs (see etcdcluster.ConfigStages) before
	// the step is taken.
	decision  etcdcluster.Decision
	urls      map[string]string
	live      etcdcluster.Live
	clusterID uint64
	view      status.EtcdView
	// dial reaches the members: with TLS, with the operator Secret's
	// certificate.
	dial etcd.Dialer
	// tlsFailure, when set, says which Secret of spec.TLS cannot serve;
	// the pass applies nothing and reaches no member.
	tlsFailure *status.Failure
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
func (e *etcdOps) with(c clients) *etcdOps {
	pass := *e
	pass.client, pass.api = c.Client, c.api
	return &pass
}

// look reads the live StatefulSet and ConfigMap and looks at the members
// before the build, which sizes the children from what it found.
func (e *etcdOps) look(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcdLook, error) {
	var look etcdLook
	sts := &appsv1.StatefulSet{}
	switch err := e.client.Get(ctx, client.ObjectKeyFromObject(o), sts); {
	case err == nil:
		look.live.Replicas = sts.Spec.Replicas
	case !apierrors.IsNotFound(err):
		return look, fmt.Errorf("get StatefulSet %s: %w", o.Name, err)
	}
	cm := &corev1.ConfigMap{}
	switch err := e.client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: etcdcluster.ConfigMapName(o.Name)}, cm); {
	case err == nil:
		look.live.Files = cm.Data
	case !apierrors.IsNotFound(err):
		return look, fmt.Errorf("get ConfigMap %s: %w", etcdcluster.ConfigMapName(o.Name), err)
	}
	look.dial = e.dial
	var trust etcdcluster.Trust
	if o.Spec.TLSEnabled() {
		dial, cas, err := e.tlsDialer(ctx, o)
		if f, ok := errors.AsType[*status.Failure](err); ok {
			look.tlsFailure = f
			return look, nil
		}
		if err != nil {
			return look, err
		}
		look.dial, trust = dial, cas
	}
	e.dial = look.dial
	ctx, cancel := context.WithTimeout(ctx, etcdStepBudget)
	defer cancel()
	var err error
	look.obs, look.urls, look.clusterID, err = e.observe(ctx, o)
	look.obs.Trust = trust
	if err == nil {
		look.decision = etcdcluster.Next(&o.Spec, o.Namespace, look.obs)
	}
	return look, err
}

// decide asks the planner for the next step and takes it.
func (e *etcdOps) decide(ctx context.Context, o *etcdv1beta2.EtcdCluster, look *etcdLook) (Step, error) {
	e.dial = look.dial
	obs, d := look.obs, look.decision
	view := status.EtcdView{Observed: true, Decision: d}
	if look.clusterID != 0 {
		view.ClusterID = strconv.FormatUint(look.clusterID, 16)
	}
	if obs.Reachable {
		view.Members = etcdcluster.Record(obs, obs.Members)
	}
	look.view = view
	s := Step{}
	if d.Failure {
		s.Failure = &status.Failure{Reason: d.Reason, Message: d.Message}
		return s, nil
	}
	if d.Done() {
		s.RequeueAfter = etcdRecheck
		return s, nil
	}
	if d.Action.Kind == etcdcluster.None {
		s.Waiting = d.Message
		return s, nil
	}
	members, waiting, err := e.act(ctx, o, obs, look.urls, d.Action)
	if err != nil {
		return Step{}, fmt.Errorf("%s: %w", d.Message, err)
	}
	if waiting != "" {
		s.Waiting = waiting
		view.Decision.Message = waiting
	} else {
		s.Took, s.Event = d.Message, etcdStepEvent(d.Action.Kind)
	}
	if members != nil {
		view.Members = members
	}
	look.view = view
	return s, nil
}

// observe reads the member pods and their claims from the cache and,
// through the pods' IPs (the operator does not rely on cluster DNS), the
// members etcd reports and each one's health. urls maps a member name to
// its client URL; clusterID is the cluster the members counted belong to.
func (e *etcdOps) observe(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcdcluster.Observed, map[string]string, uint64, error) {
	obs := etcdcluster.Observed{Cluster: o.Name, Recorded: o.Status.Members, Pods: map[string]etcdcluster.Pod{}, Claims: map[string]string{}, JoinTimeout: e.joinTimeout}
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
	for _, c := range claimList.Items {
		obs.Claims[c.Name] = string(c.UID)
	}
	urls := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		pod := etcdcluster.PodOf(&p, obs.Claims[etcdcluster.ClaimName(p.Name)])
		pod.Created = p.CreationTimestamp.Time
		_, why, err := strandedClaim(ctx, e.api, &p)
		if err != nil {
			return obs, nil, 0, err
		}
		pod.Stranded = why
		if pod.Ready && p.Spec.NodeName != "" {
			// A pod on a node that no longer reports keeps the Ready it had.
			notReady, err := nodeNotReady(ctx, e.client, p.Spec.NodeName)
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

// podAnswer is what one member pod answered.
type podAnswer struct {
	status *etcd.Status
	list   *etcd.MemberList
}

// askMembers asks each member pod (urls: pod name to client URL), in
// parallel, for its status and its member list, and makes one view of
// them. Only the answers of one cluster count: the cluster recorded
// (recorded, when not 0), else the one most pods answer for. A pod counts
// only if it answers as the member of its own name (its name or peer
// URL): a pod that carries the kind's labels but runs another cluster's
// member, or another member, is never counted. The members are the
// leader's list, else that of a member that knows a leader, else any.
func askMembers(ctx context.Context, dial etcd.Dialer, cluster, namespace string, urls map[string]string, recorded uint64) memberAnswers {
	names := slices.Sorted(maps.Keys(urls))
	answers := askEach(ctx, dial, names, urls)
	own := ownMember{cluster: cluster, namespace: namespace}
	clusterID := recorded
	if clusterID == 0 {
		clusterID = own.mostAnswered(names, answers)
	}
	out := memberAnswers{clusterID: clusterID}
	var list *etcd.MemberList
	for i, a := range answers {
		if a.status == nil || a.status.ClusterID != clusterID || (a.list != nil && !own.selfIn(names[i], a.status, a.list)) {
			if a.status != nil {
				out.foreign = append(out.foreign, names[i])
			}
			continue
		}
		switch st := a.status; {
		case a.list == nil:
		case st.Leader != 0 && st.Leader == st.MemberID:
			list, out.fromLeader = a.list, true
		case list == nil || (st.Leader != 0 && !out.fromLeader):
			list = a.list
		}
	}
	if list == nil {
		// No member of the cluster answers: the planner tells a seed that
		// is starting from a cluster that lost its quorum.
		return out
	}
	// The statuses of the cluster's members, by member ID; a status counts
	// only from a pod whose member is in the list under the pod's name.
	byID := map[uint64]*etcd.Status{}
	var leader uint64
	for i, a := range answers {
		st := a.status
		if st == nil || st.ClusterID != clusterID || slices.Contains(out.foreign, names[i]) ||
			!slices.ContainsFunc(list.Members, func(m etcd.Member) bool { return m.ID == st.MemberID && own.is(names[i], m) }) {
			continue
		}
		byID[st.MemberID] = st
		if st.Leader != 0 {
			leader = st.Leader
		}
	}
	out.reachable = true
	for _, m := range list.Members {
		name := m.Name
		if name == "" && len(m.PeerURLs) > 0 {
			name, _ = etcdcluster.MemberOfPeerURL(cluster, namespace, m.PeerURLs[0])
		}
		name = cmp.Or(name, strconv.FormatUint(m.ID, 16))
		member := etcdcluster.Member{ID: m.ID, Name: name, Started: m.Name != "", Learner: m.IsLearner, Leader: m.ID == leader,
			PeerTLS: etcdcluster.PeerTLS(m.PeerURLs), Serving: etcdcluster.ServingStage(m.PeerURLs, m.ClientURLs)}
		if st := byID[m.ID]; st != nil {
			member.Version = st.Version
			member.Healthy = st.Leader != 0 && len(st.Errors) == 0
			member.Alarms = st.Alarms
		}
		out.members = append(out.members, member)
	}
	return out
}

// askEach asks the pod of each name, at its URL in urls, in parallel, for
// its member's status and member list.
func askEach(ctx context.Context, dial etcd.Dialer, names []string, urls map[string]string) []podAnswer {
	answers := make([]podAnswer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			url := urls[name]
			cli, err := dial(ctx, []string{url})
			if err != nil {
				return
			}
			defer cli.Close()
			c, cancel := context.WithTimeout(ctx, etcdCallTimeout)
			defer cancel()
			st, err := cli.Status(c, url)
			if err != nil {
				return
			}
			answers[i].status = st
			// A learner may refuse the list; its status still counts.
			if list, err := cli.MemberList(c); err == nil {
				answers[i].list = list
			}
		})
	}
	wg.Wait()
	return answers
}

// ownMember tells whether a member a pod answers as is the pod's own.
type ownMember struct{ cluster, namespace string }

// is reports whether mem, a member of a list, is the member of the pod
// called pod: by its name, or, before it has started, its peer URL.
func (o ownMember) is(pod string, mem etcd.Member) bool {
	if mem.Name != "" {
		return mem.Name == pod
	}
	for _, u := range mem.PeerURLs {
		if n, ok := etcdcluster.MemberOfPeerURL(o.cluster, o.namespace, u); ok && n == pod {
			return true
		}
	}
	return false
}

// selfIn reports whether the pod's member (st) is in the list it gave, of
// its own cluster, as the pod's own member.
func (o ownMember) selfIn(pod string, st *etcd.Status, list *etcd.MemberList) bool {
	return list != nil && list.ClusterID == st.ClusterID && slices.ContainsFunc(list.Members, func(m etcd.Member) bool {
		return m.ID == st.MemberID && o.is(pod, m)
	})
}

// mostAnswered is the cluster most pods answer for as their own member
// (ties: the lowest ID, so that every pass picks the same); 0 when none.
func (o ownMember) mostAnswered(names []string, answers []podAnswer) uint64 {
	votes := map[uint64]int{}
	for i, a := range answers {
		if a.status != nil && o.selfIn(names[i], a.status, a.list) {
			votes[a.status.ClusterID]++
		}
	}
	var id uint64
	for c, n := range votes {
		if id == 0 || n > votes[id] || (n == votes[id] && c < id) {
			id = c
		}
	}
	return id
}

// act takes the planner's action. It returns the membership to record
// when the action changed it (nil otherwise), or why it waits instead
// (a learner that has not caught up).
func (e *etcdOps) act(ctx context.Context, o *etcdv1beta2.EtcdCluster, obs etcdcluster.Observed, urls map[string]string, a etcdcluster.Action) ([]etcdv1beta2.EtcdMember, string, error) {
	switch a.Kind {
	case etcdcluster.Seed:
		return []etcdv1beta2.EtcdMember{{Name: a.Member}}, "", nil
	case etcdcluster.Upgrade:
		return nil, "", e.setImage(ctx, o.Namespace, a.Member, a.Image)
	case etcdcluster.RestartPod:
		return nil, "", deletePodOfUID(ctx, e.client, o.Namespace, a.Member, a.PodUID)
	case etcdcluster.SecurePeer:
		// The member's start-up file is at Secure already (applied by
		// this pass); its pod restarts from it once its URL has moved.
		if _, waiting, err := changeMembership(ctx, e.dial, obs, urls, a); err != nil || waiting != "" {
			return nil, waiting, err
		}
		return nil, "", deletePodOfUID(ctx, e.client, o.Namespace, a.Member, a.PodUID)
	case etcdcluster.ReplaceVolume:
		return nil, "", deleteStranded(ctx, e.client, o.Namespace, etcdcluster.ClaimName(a.Member), a.ClaimUID, a.Member, a.PodUID)
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
	case etcdcluster.AddLearner, etcdcluster.AddMember:
		added, err := cli.AddMember(ctx, a.PeerURL, a.Kind == etcdcluster.AddLearner)
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
