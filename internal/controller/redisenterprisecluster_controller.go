package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=app.redislabs.com,resources=redisenterpriseclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.redislabs.com,resources=redisenterpriseclusters/status,verbs=patch
// +kubebuilder:rbac:groups=app.redislabs.com,resources=redisenterpriseclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// The backup Jobs of spec.backup.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// The role labels and the rolling update, pod by pod.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch;delete

const (
	// handoverTimeout bounds how long writes stay paused on the old
	// primary while the new one catches up.
	handoverTimeout = 5 * time.Second
	// fencePause is how long a failed primary that still answers has its
	// writes paused while it is made a replica.
	fencePause = 5 * time.Second
	// redisStepInterval is how soon a pass follows a step; redisWaitInterval
	// how often a waiting cluster is looked at; redisRecheck how often a
	// running one is (Redis changes without an event the operator sees).
	redisStepInterval = 200 * time.Millisecond
	redisWaitInterval = time.Second
	redisRecheck      = 10 * time.Second
	// streamingWithin is how recently a replica must have heard from its
	// primary (which pings it every second) for the primary to count as
	// alive, whatever the operator can reach.
	streamingWithin = 3 * time.Second
	// passwordLength is the length of a generated password (letters and
	// digits: about 190 bits).
	passwordLength = 32
)

// redisConnector is what the RedisEnterpriseCluster controller needs of the
// manager beyond the engine: a client to create the Secret, label and
// delete pods, a reader that is not the cache (set when the controller is
// set up: watch), and the Redis nodes.
type redisConnector struct {
	client    client.Client
	apiReader client.Reader
	// nodes returns the Redis nodes of a cluster, reached with its
	// password, and with TLS when tls is set but at the addresses of
	// plain.
	nodes func(password string, tls *tls.Config, plain map[string]bool) redisnode.Nodes
	// down remembers since when each cluster's primary has been down.
	down          *primaryDown
	clock         clock.PassiveClock
	failoverAfter time.Duration
	gauges        *redisGauges
	backups       *redisBackups
}

// redisEnterpriseClusterKind reconciles RedisEnterpriseCluster: the
// declarative children through the engine, the roles of the Redis nodes
// through Redis, one planned step a pass (rec.Plan).
func redisEnterpriseClusterKind(opts Options) kind[*redisv1alpha1.RedisEnterpriseCluster] {
	x := &redisConnector{
		nodes: func(password string, tls *tls.Config, plain map[string]bool) redisnode.Nodes {
			return redisnode.Client{Password: password, TLS: tls, Plain: plain}
		},
		down:          &primaryDown{},
		clock:         cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}),
		failoverAfter: cmp.Or(opts.RedisFailoverAfter, DefaultRedisFailoverAfter),
		gauges:        newRedisGauges(opts.Metrics),
		backups:       newRedisBackups(opts.SnapshotImage, opts.Metrics),
	}
	return x.kind()
}

func (x *redisConnector) kind() kind[*redisv1alpha1.RedisEnterpriseCluster] {
	gvk := redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster")
	k := kind[*redisv1alpha1.RedisEnterpriseCluster]{
		name:      rec.KindName,
		gvk:       gvk,
		newObject: func() *redisv1alpha1.RedisEnterpriseCluster { return &redisv1alpha1.RedisEnterpriseCluster{} },
		owns: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.StatefulSet{},
			&policyv1.PodDisruptionBudget{}, &batchv1.Job{}},
		watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podOwner(rec.KindName)),
				builder.WithPredicates(redisPodChanges())).
				Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(ownersOfPodsOn(mgr.GetClient(), rec.KindName)),
					builder.WithPredicates(cordonChanged())), nil
		},
		forget: func(key client.ObjectKey) {
			x.gauges.forget(key)
			x.backups.gauges.forget(key)
		},
	}
	return stepKind[*redisv1alpha1.RedisEnterpriseCluster, redisLook]{
		look: func(ctx context.Context, c clients, o *redisv1alpha1.RedisEnterpriseCluster) (redisLook, error) {
			s, err := x.with(c).secret(ctx, o, gvk)
			if err != nil {
				return redisLook{}, err
			}
			look := redisLook{secret: s}
			if o.Spec.TLS != nil {
				look.tls, err = x.with(c).lookTLS(ctx, o, gvk)
				if f, ok := errors.AsType[*status.Failure](err); ok {
					look.tlsFailure = f
					return look, nil
				}
				if err != nil {
					return look, err
				}
			}
			look.backups, err = x.backups.look(ctx, c, o)
			return look, err
		},
		build: func(o *redisv1alpha1.RedisEnterpriseCluster, look *redisLook) ([]runtime.ApplyConfiguration, error) {
			if look != nil && look.tlsFailure != nil {
				return nil, look.tlsFailure
			}
			input := rec.Input{Primary: o.Status.Primary, SnapshotImage: x.backups.image}
			if look != nil {
				input.Password = string(look.secret.Data[rec.SecretPassword])
			}
			c, err := rec.Build(resources.OwnerOf(o, gvk), &o.Spec, input)
			if err != nil {
				return nil, err
			}
			return c.Objects(), nil
		},
		step: func(ctx context.Context, c clients, o *redisv1alpha1.RedisEnterpriseCluster, look *redisLook, children observed, scope stepScope) (Step, error) {
			s, err := x.with(c).step(ctx, o, look, children, scope)
			if err != nil || scope == safetySteps || !s.converged() {
				return s, err
			}
			// A Running cluster: its backups.
			b, err := x.backups.step(ctx, c, o, gvk, &look.backups, x.clock.Now())
			if b.RequeueAfter == 0 || b.RequeueAfter > s.RequeueAfter {
				b.RequeueAfter = s.RequeueAfter
			}
			return b, err
		},
		setStatus: func(o *redisv1alpha1.RedisEnterpriseCluster, look *redisLook, pass report, now metav1.Time) {
			if look != nil && look.stepped != nil {
				o.Status.Primary, o.Status.State, o.Status.Nodes = look.stepped.primary, look.stepped.state, look.stepped.nodes
			}
			if look != nil {
				x.backups.setStatus(o, &look.backups)
			}
			status.RedisEnterpriseCluster(&o.Status, o.Generation, pass.step.Took, pass.step.Waiting, pass.step.Cause, pass.failure, now)
		},
	}.with(k)
}

// redisLook is what a pass reads of a RedisEnterpriseCluster before the
// build (the Secret whose password the nodes share) and what its step then
// found and decided (nil when no step ran), for the status.
type redisLook struct {
	secret *corev1.Secret
	// tls is spec.tls's Secret as read; tlsFailure, when set, says why it
	// cannot serve: the pass applies nothing and reaches no node.
	tls        *redisTLS
	tlsFailure *status.Failure
	backups    redisBackupLook
	stepped    *redisStepped
}

// redisStepped is what a step leaves for the status: the primary, the
// cluster's state and each node's role.
type redisStepped struct {
	primary string
	state   redisv1alpha1.ClusterState
	nodes   []redisv1alpha1.NodeStatus
}

// with returns the connector of one pass, with its clients.
func (x *redisConnector) with(c clients) *redisConnector {
	pass := *x
	pass.client, pass.apiReader = c.Client, c.api
	return &pass
}

// redisPodChanges passes the pod events that can change a node's role or
// health: a pod created or deleted, starting to terminate, changing its
// readiness, address or labels.
func redisPodChanges() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
			newPod, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return oldPod.DeletionTimestamp.IsZero() != newPod.DeletionTimestamp.IsZero() ||
				podReady(oldPod) != podReady(newPod) || oldPod.Status.PodIP != newPod.Status.PodIP ||
				oldPod.Labels[rec.RoleLabel] != newPod.Labels[rec.RoleLabel]
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// secret returns the cluster's Secret, creating it with a new password the
// first time. The password is generated once: a Secret found in the cache
// or, when the cache has none, on the API server is never given another.
func (x *redisConnector) secret(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	s, err := readSecret(ctx, x.client, x.apiReader, key)
	if err == nil || !apierrors.IsNotFound(err) {
		return s, err
	}
	password, err := newPassword()
	if err != nil {
		return nil, err
	}
	owner := resources.OwnerOf(o, gvk)
	ref := owner.Reference()
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, Namespace: o.Namespace,
			Labels: resources.Labels(rec.Selector(o.Name)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: *ref.APIVersion, Kind: *ref.Kind, Name: *ref.Name, UID: *ref.UID,
				Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{rec.SecretUsername: []byte(rec.Username(&o.Spec)), rec.SecretPassword: []byte(password)},
	}
	if err := x.client.Create(ctx, s, client.FieldOwner(FieldOwner(rec.KindName))); err != nil {
		if apierrors.IsAlreadyExists(err) {
			err = x.apiReader.Get(ctx, key, s)
		}
		if err != nil {
			return nil, fmt.Errorf("create Secret %s: %w", o.Name, err)
		}
	}
	return s, nil
}

// newPassword returns a random password of letters and digits.
func newPassword() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, passwordLength)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", fmt.Errorf("generate a password: %w", err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b), nil
}

// redisNode is one node as a pass sees it: its pod and what Redis said.
type redisNode struct {
	plan rec.Node
	pod  *corev1.Pod
	// stranded is the pod's claim whose volume is stranded on a node
	// that is gone or cordoned (plan.Stranded says which).
	stranded *corev1.PersistentVolumeClaim
}

// addr is the address of the node's Redis port ("" when its pod has no
// address).
func (n *redisNode) addr() string {
	if n == nil || n.pod == nil || n.pod.Status.PodIP == "" {
		return ""
	}
	return redisnode.Addr(n.pod.Status.PodIP, rec.Port)
}

// step looks at every node, plans the next step (rec.Plan) and takes it.
// With safetySteps, it takes only a failover or a fence.
func (x *redisConnector) step(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, look *redisLook, children observed, scope stepScope) (Step, error) {
	sts, err := x.statefulSet(ctx, o, children)
	if err != nil {
		return Step{}, err
	}
	if sts == nil {
		return Step{Waiting: "waiting for the StatefulSet", RequeueAfter: redisWaitInterval}, nil
	}
	pods := &corev1.PodList{}
	if err := x.client.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels(rec.Selector(o.Name))); err != nil {
		return Step{}, fmt.Errorf("list pods: %w", err)
	}
	var clientTLS *tls.Config
	if look.tls != nil {
		clientTLS = look.tls.client
	}
	redis := x.nodes(string(look.secret.Data[rec.SecretPassword]), clientTLS, plainNodes(clientTLS, pods.Items))
	nodes, err := x.observe(ctx, o, sts, pods.Items, redis)
	if err != nil {
		return Step{}, err
	}
	x.gauges.record(client.ObjectKeyFromObject(o), redisSampleOf(o.Status.Primary, nodes))
	in := rec.Observation{
		Want:          rec.Nodes(&o.Spec),
		Recorded:      o.Status.Primary,
		FailoverAfter: x.failoverAfter,
		// The StatefulSet controller has seen the latest template: the
		// pods' revisions say which run it.
		Settled: sts.Status.ObservedGeneration >= sts.Generation,
	}
	for _, n := range nodes {
		in.Nodes = append(in.Nodes, n.plan)
	}
	in.PrimaryDownFor = x.down.observe(client.ObjectKeyFromObject(o), in.Recorded, primaryDownNow(in), x.clock.Now())
	in.SafetyOnly = scope == safetySteps
	d := rec.Plan(in)
	log := ctrl.LoggerFrom(ctx)
	if d.Action != rec.None {
		log.Info("Taking step", "step", d.Action, "node", d.Target, "reason", d.Reason)
	} else {
		log.V(1).Info("No step", "state", d.State, "reason", d.Reason)
	}
	previous := o.Status.Primary
	if d.Action != rec.None && d.Action != rec.Record {
		if err := x.claim(ctx, o, cmp.Or(d.Primary, previous), "Taking the step: "+d.Reason); err != nil {
			return Step{}, fmt.Errorf("claim the step %s %s: %w", d.Action, d.Target, err)
		}
		if made, err := x.take(ctx, o, previous, d, nodes, redis); err != nil {
			err = fmt.Errorf("%s %s: %w", d.Action, d.Target, err)
			if previous != o.Status.Primary && !made {
				// The status must not name a primary the step did not
				// make; a node made a primary before the error is found
				// by the next pass's look. One the step did make stays
				// recorded: its old primary follows it now, and the
				// labels and replicas the error left behind are the next
				// pass's steps. Recorded back, the old primary would be
				// a primary that says it is a replica, for a failover
				// that waits for every node to answer.
				if undo := x.claim(ctx, o, previous, "The step failed: "+err.Error()); undo != nil {
					err = errors.Join(err, fmt.Errorf("restore the recorded primary %s: %w", previous, undo))
				}
			}
			return Step{}, err
		}
	}
	look.stepped = &redisStepped{primary: cmp.Or(d.Primary, o.Status.Primary), state: d.State}
	look.stepped.nodes = nodeStatuses(nodes, look.stepped.primary)
	switch {
	case d.Failure:
		return Step{Failure: &status.Failure{Reason: redisv1alpha1.ReasonNoPrimary, Message: d.Reason}, RequeueAfter: redisWaitInterval}, nil
	case d.Action != rec.None:
		return Step{Took: d.Reason, Cause: d.Cause, Event: redisStepEvent(d.Action, o.Spec.Restore != nil && previous == ""), RequeueAfter: redisStepInterval}, nil
	case d.Waiting:
		return Step{Waiting: d.Reason, Cause: d.Cause, RequeueAfter: redisWaitInterval}, nil
	}
	x.reloadCertificates(ctx, look.tls, nodes, redis)
	return Step{RequeueAfter: redisRecheck}, nil
}

// claim writes primary (the node a step is about to make or keep the
// primary) into the status, checked against
// the resourceVersion this pass read, before the step touches a node. Of
// two passes that decided from the same version (two managers without
// leader election, or a pass from a cache that is behind), only the first
// to claim acts: the other is refused (409 Conflict) and decides again
// from what the first wrote. A claim that changes nothing writes nothing,
// but is still refused when the version is not the latest. A claim that
// changes the primary also says, in the conditions, that the cluster is
// changing (why: message): the status never says Running, Ready, beside a
// primary that the nodes' roles it lists do not show yet.
func (x *redisConnector) claim(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, primary, message string) error {
	claimed := o.DeepCopy()
	claimed.Status.Primary = primary
	if primary != o.Status.Primary {
		claimed.Status.State = redisv1alpha1.StateInitializing
		status.RedisEnterpriseCluster(&claimed.Status, o.Generation, "", message, "", nil, metav1.NewTime(x.clock.Now()))
	}
	if err := x.client.Status().Patch(ctx, claimed, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	o.ResourceVersion = claimed.ResourceVersion
	o.Status = claimed.Status
	return nil
}

// primaryDownNow reports whether the recorded primary is down in this
// look: its pod gone, terminating or not ready, or Redis silent.
func primaryDownNow(in rec.Observation) bool {
	if in.Recorded == "" {
		return false
	}
	for _, n := range in.Nodes {
		if n.Name == in.Recorded {
			return n.Pod != rec.PodReady || !n.Answered
		}
	}
	return true
}

// statefulSet returns the cluster's StatefulSet: as this pass applied or
// found it, else (a pass stopped before) from the cache; nil when there
// is none.
func (x *redisConnector) statefulSet(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, children observed) (*appsv1.StatefulSet, error) {
	if sts, ok := children[childKey("StatefulSet", o.Name)].(*appsv1.StatefulSet); ok {
		return sts, nil
	}
	sts := &appsv1.StatefulSet{}
	if err := x.client.Get(ctx, client.ObjectKeyFromObject(o), sts); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return sts, nil
}

// observe reads the nodes' pods from the cache and asks every pod with an
// address for its replication state, all at once.
func (x *redisConnector) observe(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, sts *appsv1.StatefulSet, pods []corev1.Pod, redis redisnode.Nodes) ([]redisNode, error) {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	names := []string{}
	for i := range rec.Nodes(&o.Spec) {
		names = append(names, rec.PodName(o.Name, i))
	}
	// A recorded primary beyond the nodes wanted (being scaled away) is
	// looked at too, until it is gone.
	if p := o.Status.Primary; p != "" && byName[p] != nil && !slices.Contains(names, p) {
		names = append(names, p)
	}
	nodes := make([]redisNode, len(names))
	hosts := make([]string, len(names))
	lags := make([]map[string]time.Duration, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		n := &nodes[i]
		n.plan = rec.Node{Name: name, Pod: rec.PodMissing}
		pod := byName[name]
		if pod == nil {
			continue
		}
		n.pod = pod
		n.plan.RoleLabel = pod.Labels[rec.RoleLabel]
		n.plan.TLS = rec.MountsTLS(pod)
		claim, why, err := strandedClaim(ctx, x.apiReader, pod)
		if err != nil {
			return nil, err
		}
		n.stranded, n.plan.Stranded = claim, why
		if n.plan.Cordoned, err = cordoned(ctx, x.client, pod.Spec.NodeName); err != nil {
			return nil, fmt.Errorf("get node %s: %w", pod.Spec.NodeName, err)
		}
		n.plan.Current = sts.Status.UpdateRevision == "" || pod.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision
		switch {
		case !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			// Still asked: a terminating primary that answers is still
			// handing its last writes to its replicas.
			n.plan.Pod = rec.PodTerminating
		case podReady(pod):
			n.plan.Pod = rec.PodReady
		default:
			n.plan.Pod = rec.PodNotReady
		}
		if n.addr() == "" {
			continue
		}
		wg.Go(func() {
			info, err := redis.Info(ctx, n.addr())
			if err != nil {
				n.plan.Busy = redisnode.IsBusy(err)
				return
			}
			n.plan.Answered = true
			n.plan.Primary, n.plan.Offset, n.plan.Keys = info.Primary, info.Offset, info.Keys
			lags[i] = info.ReplicaLag
			if !info.Primary {
				hosts[i] = info.PrimaryHost
				n.plan.LinkUp = info.LinkUp
				n.plan.Streaming = info.LinkUp && info.LastIO >= 0 && info.LastIO <= streamingWithin
				if n.plan.TLS && !info.LinkUp {
					n.plan.Link = replicationLink(ctx, redis, n.addr())
				}
			}
		})
	}
	wg.Wait()
	// Name the primary each replica follows, by host name or address.
	for i := range nodes {
		if hosts[i] == "" || rec.FollowsNoPrimary(hosts[i]) {
			continue
		}
		for _, other := range nodes {
			if other.pod != nil && (strings.HasPrefix(hosts[i], other.plan.Name+".") || hosts[i] == other.pod.Status.PodIP) {
				nodes[i].plan.Follows = other.plan.Name
			}
		}
	}
	// A replica is acknowledged when the primary it follows heard from it
	// lately: the primary's view, which WAIT goes by.
	for i := range nodes {
		for j := range nodes {
			if f := nodes[i].plan.Follows; f != "" && nodes[j].plan.Name == f && nodes[j].plan.Primary {
				lag, ok := lags[j][nodes[i].pod.Status.PodIP]
				nodes[i].plan.Acked = ok && lag <= streamingWithin
			}
		}
	}
	return nodes, ctx.Err()
}

// take performs the planned step. recorded is the primary before it (the
// status already names the one the step claimed). made reports, with an
// error, that the step had already made d.Primary the primary (and, for a
// handover, the old primary its replica) when the error came.
func (x *redisConnector) take(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, recorded string, d rec.Decision, nodes []redisNode, redis redisnode.Nodes) (made bool, err error) {
	node := func(name string) *redisNode {
		for i := range nodes {
			if nodes[i].plan.Name == name {
				return &nodes[i]
			}
		}
		return nil
	}
	host := rec.NodeHost(o.Name, d.Primary)
	primaryTLS := node(d.Primary) != nil && node(d.Primary).plan.TLS
	repoint := func() error {
		var errs []error
		for _, name := range d.Repoint {
			if err := follow(ctx, redis, node(name), host, primaryTLS); err != nil {
				errs = append(errs, fmt.Errorf("point %s at %s: %w", name, d.Primary, err))
			}
		}
		return errors.Join(errs...)
	}
	switch d.Action {
	case rec.None, rec.Record:
		return false, nil
	case rec.Promote:
		if !node(d.Target).plan.Primary {
			if err := redis.Promote(ctx, node(d.Target).addr()); err != nil {
				return false, err
			}
		}
		// A replica not repointed now is at the next pass.
		return true, repoint()
	case rec.Failover:
		if err := x.fence(ctx, node(d.Fence), d.Target, host, primaryTLS, redis); err != nil {
			return false, fmt.Errorf("fence the old primary %s: %w", d.Fence, err)
		}
		if err := redis.Promote(ctx, node(d.Target).addr()); err != nil {
			return false, err
		}
		if err := x.label(ctx, node(d.Target), redisv1alpha1.RolePrimary); err != nil {
			return true, err
		}
		return true, repoint()
	case rec.Repoint:
		return false, repoint()
	case rec.KillScript:
		err := redis.KillScript(ctx, node(d.Target).addr())
		if errors.Is(err, redisnode.ErrUnkillable) {
			// Not an error of the step: the primary stays down, and the
			// failover follows once the window has passed.
			ctrl.LoggerFrom(ctx).Info("The busy primary's script cannot be killed: it wrote", "node", d.Target)
			return false, nil
		}
		return false, err
	case rec.Label:
		for name, role := range d.Labels {
			if err := x.label(ctx, node(name), role); err != nil {
				return false, err
			}
		}
		return false, nil
	case rec.DeletePod:
		pod := node(d.Target).pod
		return false, client.IgnoreNotFound(x.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
	case rec.ReplaceVolume:
		n := node(d.Target)
		return false, deleteStranded(ctx, x.client, o.Namespace, n.stranded.Name, string(n.stranded.UID), n.pod.Name, string(n.pod.UID))
	case rec.Handover:
		if err := handover(ctx, redis, node(recorded), node(d.Target), host); err != nil {
			return false, err
		}
		// The Services follow the primary at once.
		if err := x.label(ctx, node(recorded), redisv1alpha1.RoleReplica); err != nil {
			return true, err
		}
		if err := x.label(ctx, node(d.Target), redisv1alpha1.RolePrimary); err != nil {
			return true, err
		}
		// A replica that cannot be pointed at the new primary now (its
		// pod evicted meanwhile, as a drain does) is at a later pass.
		return true, repoint()
	}
	return false, fmt.Errorf("unknown step %q", d.Action)
}

// fence makes sure the failed primary old takes no write before another
// node is promoted: its pod loses the primary's label (the Services stop
// sending it clients) and, where it still answers as a primary, its writes
// are paused and it is made a replica of the node to be promoted (newName,
// at newHost). A primary that answers but cannot be made a replica stops
// the failover.
func (x *redisConnector) fence(ctx context.Context, old *redisNode, newName, newHost string, newTLS bool, redis redisnode.Nodes) error {
	if old == nil || old.pod == nil {
		return nil
	}
	if old.pod.DeletionTimestamp.IsZero() && old.plan.RoleLabel == redisv1alpha1.RolePrimary {
		if err := x.label(ctx, old, redisv1alpha1.RoleReplica); err != nil {
			return err
		}
	}
	if old.addr() == "" {
		return nil
	}
	info, err := redis.Info(ctx, old.addr())
	if redisnode.IsBusy(err) && redis.KillScript(ctx, old.addr()) == nil {
		// Running a script past the busy threshold: a read-only one is
		// killed, and the node is then fenced as any that answers. One
		// that wrote cannot be: the node answers nothing until it ends,
		// then, its replicas following the new primary, refuses writes
		// (min-replicas-to-write) until a later pass fences it.
		info, err = redis.Info(ctx, old.addr())
	}
	if err != nil || !info.Primary {
		// Silent (down for the whole window, and no replica hears from
		// it), or already a replica: it takes no write.
		return nil
	}
	if err := redis.PauseWrites(ctx, old.addr(), fencePause); err != nil {
		return fmt.Errorf("pause writes: %w", err)
	}
	if err := follow(ctx, redis, old, newHost, newTLS); err != nil {
		return fmt.Errorf("make it a replica of %s: %w", newName, err)
	}
	return redis.Unpause(ctx, old.addr())
}

// label sets the role label on n's pod.
func (x *redisConnector) label(ctx context.Context, n *redisNode, role string) error {
	if n == nil || n.pod == nil || n.plan.RoleLabel == role {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, rec.RoleLabel, role)
	if err := x.client.Patch(ctx, n.pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label pod %s: %w", n.plan.Name, client.IgnoreNotFound(err))
	}
	n.plan.RoleLabel = role
	return nil
}

// handover moves the primary from the node at oldAddr to the node at
// newAddr (whose name is newHost) without losing a write: writes pause on
// the old primary, the new one catches up to its offset, is promoted, and
// the old primary becomes its replica; then writes resume (and are refused
// as read-only on the old primary, for clients to find the new one).
func handover(ctx context.Context, redis redisnode.Nodes, old, target *redisNode, newHost string) error {
	oldAddr, newAddr := old.addr(), target.addr()
	ctx, cancel := context.WithTimeout(ctx, handoverTimeout+2*(redisnode.DialTimeout+redisnode.CallTimeout))
	defer cancel()
	if err := redis.PauseWrites(ctx, oldAddr, handoverTimeout); err != nil {
		return fmt.Errorf("pause writes: %w", err)
	}
	unpause := func() { _ = redis.Unpause(context.WithoutCancel(ctx), oldAddr) }
	deadline := time.Now().Add(handoverTimeout)
	for {
		want, err := redis.Info(ctx, oldAddr)
		if err != nil {
			unpause()
			return err
		}
		got, err := redis.Info(ctx, newAddr)
		if err != nil {
			unpause()
			return err
		}
		if got.Offset >= want.Offset {
			break
		}
		if time.Now().After(deadline) {
			unpause()
			return fmt.Errorf("the new primary did not catch up (offset %d of %d)", got.Offset, want.Offset)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := redis.Promote(ctx, newAddr); err != nil {
		unpause()
		return fmt.Errorf("promote: %w", err)
	}
	err := follow(ctx, redis, old, newHost, target.plan.TLS)
	unpause()
	if err != nil {
		return fmt.Errorf("demote the old primary: %w", err)
	}
	return nil
}

// nodeStatuses reports each node for status.nodes.
func nodeStatuses(nodes []redisNode, primary string) []redisv1alpha1.NodeStatus {
	out := make([]redisv1alpha1.NodeStatus, 0, len(nodes))
	for _, n := range nodes {
		s := redisv1alpha1.NodeStatus{Name: n.plan.Name, Role: redisv1alpha1.RoleUnknown}
		if n.plan.Answered {
			s.Role = redisv1alpha1.RoleReplica
			if n.plan.Primary {
				s.Role = redisv1alpha1.RolePrimary
			}
		}
		ready := n.plan.Pod == rec.PodReady && n.plan.Answered
		if n.plan.Name == primary {
			s.Healthy = ready && n.plan.Primary
		} else {
			s.Healthy = ready && !n.plan.Primary && n.plan.Follows == primary && rec.InSync(n.plan)
		}
		out = append(out, s)
	}
	return out
}
