package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
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
// The claims tell a member's data (read only: the StatefulSet makes them).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch

// Timeouts of the calls to etcd: a pass never waits long on a member that
// does not answer.
const (
	etcdDialTimeout = 2 * time.Second
	etcdCallTimeout = 3 * time.Second
	// etcdStepBudget bounds a whole step: the member list, the status
	// calls (in parallel) and one change.
	etcdStepBudget = 12 * time.Second
	// etcdRecheck is how often a cluster at its spec is looked at: etcd's
	// health changes without an event the operator watches.
	etcdRecheck = 15 * time.Second
)

// etcdClusterKind reconciles EtcdCluster: the children from the builder,
// then one membership step at a time through etcd's API (see
// etcdcluster.Next).
func etcdClusterKind(Options) kind[*etcdv1beta2.EtcdCluster] {
	gvk := etcdv1beta2.GroupVersion.WithKind("EtcdCluster")
	// The step reads pods and patches one on upgrade: it uses the
	// manager's client, which the watch hook (run once, at setup) hands it.
	ops := &etcdOps{}
	return kind[*etcdv1beta2.EtcdCluster]{
		name:      etcdcluster.KindName,
		gvk:       gvk,
		newObject: func() *etcdv1beta2.EtcdCluster { return &etcdv1beta2.EtcdCluster{} },
		owns:      []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}},
		// Fewer than two members need no PodDisruptionBudget.
		prunes: []client.Object{&policyv1.PodDisruptionBudget{}},
		build: func(o *etcdv1beta2.EtcdCluster, _ observed) ([]runtime.ApplyConfiguration, error) {
			return etcdcluster.Build(resources.OwnerOf(o, gvk), &o.Spec, o.Status.Members).Objects(), nil
		},
		step: func(ctx context.Context, o *etcdv1beta2.EtcdCluster, children observed, scope stepScope) (Step, error) {
			// Every step of an etcd cluster moves it toward its spec
			// (membership, version); none is taken while a child is not
			// as the spec wants.
			if scope == safetySteps {
				return Step{}, nil
			}
			return ops.step(ctx, o, children)
		},
		setStatus: func(o *etcdv1beta2.EtcdCluster, pass report, now metav1.Time) {
			view, _ := pass.step.Observed.(status.EtcdView)
			selector := labels.SelectorFromSet(etcdcluster.Selector(o.Name)).String()
			status.EtcdCluster(&o.Status, o.Generation, &o.Spec, selector, view, pass.failure, now)
		},
		watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			ops.client = mgr.GetClient()
			return b, nil
		},
	}
}

// etcdOps performs an EtcdCluster's steps.
type etcdOps struct {
	client client.Client
}

// step reads the members through etcd's API, asks the planner for the
// next step, and takes it.
func (e *etcdOps) step(ctx context.Context, o *etcdv1beta2.EtcdCluster, _ observed) (Step, error) {
	if e.client == nil {
		return Step{}, errors.New("the EtcdCluster controller has no client")
	}
	ctx, cancel := context.WithTimeout(ctx, etcdStepBudget)
	defer cancel()
	obs, ips, err := e.observe(ctx, o)
	if err != nil {
		return Step{}, err
	}
	d := etcdcluster.Next(&o.Spec, o.Namespace, obs)
	view := status.EtcdView{Observed: true, Decision: d}
	if obs.Reachable {
		view.Members = etcdcluster.Record(obs, obs.Members)
	}
	s := Step{Observed: view}
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
	members, waiting, err := e.act(ctx, o, obs, ips, d.Action)
	if err != nil {
		return Step{}, fmt.Errorf("%s: %w", d.Message, err)
	}
	if waiting != "" {
		s.Waiting = waiting
		view.Decision.Message = waiting
	} else {
		s.Took = d.Message
	}
	if members != nil {
		view.Members = members
	}
	s.Observed = view
	return s, nil
}

// observe reads the member pods and their claims from the cache and,
// through the pods' IPs (the operator does not rely on cluster DNS), the
// members etcd reports and each one's health. ips maps a member name to
// its client URL.
func (e *etcdOps) observe(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcdcluster.Observed, map[string]string, error) {
	obs := etcdcluster.Observed{Cluster: o.Name, Recorded: o.Status.Members, Pods: map[string]etcdcluster.Pod{}}
	selector := client.MatchingLabels(resources.Labels(etcdcluster.Selector(o.Name)))
	pods := &corev1.PodList{}
	if err := e.client.List(ctx, pods, client.InNamespace(o.Namespace), selector); err != nil {
		return obs, nil, fmt.Errorf("list pods: %w", err)
	}
	claimList := &corev1.PersistentVolumeClaimList{}
	if err := e.client.List(ctx, claimList, client.InNamespace(o.Namespace), selector); err != nil {
		return obs, nil, fmt.Errorf("list claims: %w", err)
	}
	claims := map[string]string{}
	for _, c := range claimList.Items {
		claims[c.Name] = string(c.UID)
	}
	ips := map[string]string{}
	var endpoints []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		obs.Pods[p.Name] = etcdcluster.PodOf(&p, claims[etcdcluster.ClaimName(p.Name)])
		if p.Status.PodIP != "" {
			url := "http://" + p.Status.PodIP + ":" + strconv.Itoa(etcdcluster.ClientPort)
			ips[p.Name] = url
			endpoints = append(endpoints, url)
		}
	}
	// Each pod is asked on its own, in parallel: a learner refuses the
	// member list, and a member that is down must not hold up the others.
	type answer struct {
		status *clientv3.StatusResponse
		list   *clientv3.MemberListResponse
	}
	answers := make([]answer, len(endpoints))
	var wg sync.WaitGroup
	for i, url := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cli, err := newEtcdClient(ctx, []string{url})
			if err != nil {
				return
			}
			defer cli.Close()
			c, cancel := context.WithTimeout(ctx, etcdCallTimeout)
			defer cancel()
			if st, err := cli.Status(c, url); err == nil && st.Header != nil {
				answers[i].status = st
			} else {
				return
			}
			// Serializable: a member without a quorum still says who the
			// members are, so that the status can say which are down.
			if list, err := cli.MemberList(c, clientv3.WithSerializable()); err == nil {
				answers[i].list = list
			}
		}()
	}
	wg.Wait()
	// The member list of a member that knows a leader, else any.
	var list *clientv3.MemberListResponse
	var leader uint64
	byID := map[uint64]*clientv3.StatusResponse{}
	for _, a := range answers {
		if a.status == nil {
			continue
		}
		byID[a.status.Header.MemberId] = a.status
		if a.status.Leader != 0 {
			leader = a.status.Leader
		}
		if a.list != nil && (list == nil || a.status.Leader != 0) {
			list = a.list
		}
	}
	if list == nil {
		// No member answers: the planner tells a seed that is starting
		// from a cluster that lost its quorum.
		return obs, ips, nil
	}
	obs.Reachable = true
	for _, m := range list.Members {
		name := m.Name
		if name == "" && len(m.PeerURLs) > 0 {
			name, _ = etcdcluster.MemberOfPeerURL(o.Name, o.Namespace, m.PeerURLs[0])
		}
		name = cmp.Or(name, strconv.FormatUint(m.ID, 16))
		member := etcdcluster.Member{ID: m.ID, Name: name, Started: m.Name != "", Learner: m.IsLearner, Leader: m.ID == leader}
		if st := byID[m.ID]; st != nil {
			member.Version = st.Version
			member.Healthy = st.Leader != 0 && len(st.Errors) == 0
		}
		obs.Members = append(obs.Members, member)
	}
	return obs, ips, nil
}

// act takes the planner's action. It returns the membership to record
// when the action changed it (nil otherwise), or why it waits instead
// (a learner that has not caught up).
func (e *etcdOps) act(ctx context.Context, o *etcdv1beta2.EtcdCluster, obs etcdcluster.Observed, ips map[string]string, a etcdcluster.Action) ([]etcdv1beta2.EtcdMember, string, error) {
	if a.Kind == etcdcluster.Seed {
		return []etcdv1beta2.EtcdMember{{Name: a.Member}}, "", nil
	}
	if a.Kind == etcdcluster.Upgrade {
		return nil, "", e.setImage(ctx, o.Namespace, a.Member, a.Image)
	}
	if a.Kind == etcdcluster.RestartPod {
		uid := types.UID(a.PodUID)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: a.Member}}
		if err := e.client.Delete(ctx, p, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return nil, "", fmt.Errorf("delete pod %s: %w", a.Member, err)
		}
		return nil, "", nil
	}
	// Learners refuse membership changes: only healthy voters get them.
	endpoints := make([]string, 0, len(obs.Members))
	for _, m := range obs.Members {
		if url, ok := ips[m.Name]; ok && m.Healthy && !m.Learner {
			endpoints = append(endpoints, url)
		}
	}
	if a.Kind == etcdcluster.MoveLeader {
		// Only the leader moves its leadership.
		endpoints = nil
		for _, m := range obs.Members {
			if m.Leader {
				endpoints = []string{ips[m.Name]}
			}
		}
	}
	if len(endpoints) == 0 {
		return nil, "", errors.New("no healthy member to send the change to")
	}
	cli, err := newEtcdClient(ctx, endpoints)
	if err != nil {
		return nil, "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	members := obs.Members
	switch a.Kind {
	case etcdcluster.AddLearner, etcdcluster.AddMember:
		add := cli.MemberAddAsLearner
		if a.Kind == etcdcluster.AddMember {
			add = cli.MemberAdd
		}
		resp, err := add(ctx, []string{a.PeerURL})
		if refusedUntilSettled(err) {
			return nil, "Waiting for the members to settle: etcd adds a member only once every voting member has been connected for 5 s", nil
		}
		if err != nil {
			return nil, "", err
		}
		members = append(members, etcdcluster.Member{ID: resp.Member.ID, Name: a.Member, Learner: resp.Member.IsLearner})
	case etcdcluster.Promote:
		if _, err := cli.MemberPromote(ctx, a.ID); err != nil {
			if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "in sync with leader") {
				return nil, fmt.Sprintf("Learner %s is catching up with the leader", a.Member), nil
			}
			return nil, "", err
		}
		return nil, "", nil
	case etcdcluster.Remove:
		_, err := cli.MemberRemove(ctx, a.ID)
		if refusedUntilSettled(err) {
			return nil, fmt.Sprintf("Waiting for the members to settle before removing %s", a.Member), nil
		}
		if err != nil {
			return nil, "", err
		}
		members = nil
		for _, m := range obs.Members {
			if m.ID != a.ID {
				members = append(members, m)
			}
		}
	case etcdcluster.MoveLeader:
		if _, err := cli.MoveLeader(ctx, a.ID); err != nil {
			return nil, "", err
		}
		return nil, "", nil
	default:
		return nil, "", fmt.Errorf("unknown action %q", a.Kind)
	}
	return etcdcluster.Record(obs, members), "", nil
}

// refusedUntilSettled reports whether etcd refused a membership change
// for now (strict reconfiguration check): a member promoted or restarted
// less than 5 s ago, or too few started members.
func refusedUntilSettled(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrMemberNotEnoughStarted))
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

// newEtcdClient returns a client of the members at endpoints. It does not
// wait for a connection: each call is bounded by its own context.
func newEtcdClient(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: etcdDialTimeout,
		Context:     ctx,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}
