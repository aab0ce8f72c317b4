package redis

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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/controller/stateful"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
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
// The console (spec.console): its Deployment, and the service account,
// Role and RoleBinding that let it read its own cluster. The operator may
// grant only what it holds: get and patch on the cluster (the console
// sets its annotations), get on its Secrets.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=app.redislabs.com,resources=redisenterpriseclusters,verbs=patch

const (
	// undoTimeout bounds the write that takes back a step's claim after
	// the step failed, which runs even when the pass was cancelled.
	undoTimeout = 10 * time.Second
	// handoverTimeout bounds how long writes stay paused on the old
	// primary while the new one catches up (FAILOVER's TIMEOUT).
	handoverTimeout = 5 * time.Second
	// takeoverWithin is how long the new primary of a handover has to
	// take over once the old one made itself its replica, and takeoverPoll
	// how often it is asked.
	takeoverWithin = 2 * time.Second
	takeoverPoll   = 50 * time.Millisecond
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

// redisOps looks at a RedisEnterpriseCluster's nodes and takes its steps,
// as etcdOps does an EtcdCluster's. It holds what the controller needs
// beyond the engine: a client to create the Secret, label and
// delete pods, a reader that is not the cache (set when the controller is
// set up: watch), and the Redis nodes.
type redisOps struct {
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
	// remembered is what each cluster's nodes were last reached with.
	remembered *remembered
	// lapses remembers since when each Running cluster has been seen
	// otherwise.
	lapses *lapses
	// image is the operator's open-source Redis image (see
	// redisenterprisecluster.Image).
	image string
	// config is what the nodes answered to the parameters set on them.
	config *liveConfig
}

// ClusterKind reconciles RedisEnterpriseCluster: the declarative
// children through the engine, the roles of the Redis nodes through
// Redis, one planned step a pass (redisenterprisecluster.Plan).
func ClusterKind(opts Options) engine.Kind[*redisv1alpha1.RedisEnterpriseCluster] {
	nodes := opts.Nodes
	if nodes == nil {
		// Kept across passes: a node's certificate, known and unchanged,
		// is not handshaken in full at every look.
		sessions := &redisnode.Sessions{}
		nodes = func(password string, tls *tls.Config, plain map[string]bool) redisnode.Nodes {
			return redisnode.Client{Password: password, TLS: tls, Plain: plain, Sessions: sessions}
		}
	}
	ops := &redisOps{
		nodes:         nodes,
		down:          &primaryDown{},
		clock:         cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}),
		failoverAfter: cmp.Or(opts.FailoverAfter, DefaultFailoverAfter),
		gauges:        newRedisGauges(opts.Metrics),
		backups:       newRedisBackups(opts.SnapshotImage, opts.Metrics),
		remembered:    &remembered{},
		lapses:        &lapses{},
		image:         cmp.Or(opts.Image, redisenterprisecluster.DefaultImage),
		config:        &liveConfig{},
	}
	return ops.kind()
}

func (ops *redisOps) kind() engine.Kind[*redisv1alpha1.RedisEnterpriseCluster] {
	gvk := redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster")
	k := engine.Kind[*redisv1alpha1.RedisEnterpriseCluster]{
		Name: redisenterprisecluster.KindName,
		GVK:  gvk,
		New:  func() *redisv1alpha1.RedisEnterpriseCluster { return &redisv1alpha1.RedisEnterpriseCluster{} },
		Owns: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.StatefulSet{},
			&policyv1.PodDisruptionBudget{}, &batchv1.Job{},
			&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &appsv1.Deployment{}},
		// The status says nothing of the console's Deployment: the nodes'
		// roles are written at once.
		NoRolloutWait: true,
		// The console's, deleted when spec.console turns it off.
		Prunes: []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &appsv1.Deployment{}},
		Watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(engine.PodOwner(redisenterprisecluster.KindName)),
				builder.WithPredicates(redisPodChanges())).
				Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(stateful.OwnersOfPodsOn(mgr.GetClient(), redisenterprisecluster.KindName)),
					builder.WithPredicates(stateful.CordonChanged())), nil
		},
		Forget: func(key client.ObjectKey) {
			ops.gauges.forget(key)
			ops.backups.gauges.Forget(key)
			ops.remembered.forget(key)
			ops.lapses.forget(key)
			ops.config.forget(key)
		},
		WakeOn: []string{switchover.Annotation, redisv1alpha1.ElectAnnotation, redisv1alpha1.BackupNowAnnotation},
	}
	return engine.Phases[*redisv1alpha1.RedisEnterpriseCluster, redisPrepared, redisObservation, redisPlan, *redisStepped]{
		Prepare: func(ctx context.Context, c engine.Clients, o *redisv1alpha1.RedisEnterpriseCluster) (redisPrepared, error) {
			return ops.with(c).prepare(ctx, o, gvk)
		},
		Observe: func(ctx context.Context, c engine.Clients, o *redisv1alpha1.RedisEnterpriseCluster, prepared redisPrepared) (redisObservation, error) {
			return ops.with(c).observe(ctx, o, prepared)
		},
		Build: func(o *redisv1alpha1.RedisEnterpriseCluster, pass *redisPass) ([]runtime.ApplyConfiguration, error) {
			if f := pass.Prepared.secretFailure; f != nil {
				return nil, f
			}
			if f := pass.Prepared.tlsFailure; f != nil {
				return nil, f
			}
			input := redisenterprisecluster.Input{Primary: o.Status.Primary, SnapshotImage: ops.backups.image, ConsoleImage: ops.backups.image, OpenSourceImage: ops.image}
			if pass.Began {
				input.ClaimSize = resources.TemplateClaimSize(pass.Observed.sts, redisenterprisecluster.DataVolume)
				input.Password = string(pass.Prepared.secret.Data[redisenterprisecluster.SecretPassword])
				if t := pass.Prepared.tls; t != nil {
					input.TLSTrust = t.trustBundle(pass.Observed.nodes)
				}
			}
			c, err := redisenterprisecluster.Build(resources.OwnerOf(o, gvk), &o.Spec, input)
			if err != nil {
				return nil, err
			}
			return c.Objects(), nil
		},
		Plan: func(o *redisv1alpha1.RedisEnterpriseCluster, pass *redisPass, applied engine.Observed, scope engine.Scope) redisPlan {
			return ops.plan(o, &pass.Observed, applied, scope)
		},
		Act: func(ctx context.Context, c engine.Clients, o *redisv1alpha1.RedisEnterpriseCluster, pass *redisPass) (*redisStepped, engine.Step, error) {
			stepped, s, err := ops.with(c).act(ctx, o, gvk, pass)
			s.Notices = append(s.Notices, imageNotices(o, ops.image)...)
			if err != nil || s.Failure != nil || !pass.Decision.backups || pass.Decision.held || !persistent(&o.Spec) {
				return stepped, s, err
			}
			g, s, err := growClaims(ctx, c, o, s)
			if stepped == nil {
				stepped = &redisStepped{primary: o.Status.Primary, state: o.Status.State, nodes: o.Status.Nodes}
			}
			stepped.growth = g
			return stepped, s, err
		},
		SetStatus: func(o *redisv1alpha1.RedisEnterpriseCluster, pass *redisPass, report engine.Report, now metav1.Time) {
			_, _, replaced := redisenterprisecluster.Image(&o.Spec, ops.image)
			status.RedisImageReplaced(&o.Status.Conditions, o.Generation, replaced, now)
			if redisenterprisecluster.Hibernating(&o.Spec) && pass.Began {
				status.RedisHibernated(&o.Status, o.Generation, runningPods(pass.Observed.nodes), report.Failure, now)
				ops.backups.setStatus(o, &pass.Observed.backups, handledRequest{})
				return
			}
			if s := pass.Result; s != nil {
				o.Status.Primary, o.Status.State, o.Status.Nodes = s.primary, s.state, s.nodes
				if s.switchover != nil {
					o.Status.LastSwitchover = s.switchover
				}
				o.Status.LastSwitchover = finishSwitchover(o.Status.LastSwitchover, o.Status.Primary, o.Status.Nodes)
			}
			if pass.Began {
				var handled handledRequest
				if s := pass.Result; s != nil {
					handled = s.backupRequest
				}
				ops.backups.setStatus(o, &pass.Observed.backups, handled)
			}
			status.RedisEnterpriseCluster(&o.Status, o.Generation, report.Step.Took, report.Step.Waiting, report.Step.Cause, report.Failure, now)
			status.Switchover(&o.Status.Conditions, o.Status.LastSwitchover, o.Generation, now)
			if s := pass.Result; s != nil {
				configCondition(&o.Status.Conditions, redisenterprisecluster.LiveConfig(&o.Spec), s.configRefused, s.configStale, o.Generation, now)
				stateful.SetGrowthCondition(&o.Status.Conditions, o.Generation, s.growth, now)
			}
		},
	}.With(k)
}

// redisPass is the record of a RedisEnterpriseCluster's pass.
type redisPass = engine.PassOf[redisPrepared, redisObservation, redisPlan, *redisStepped]

// redisPrepared is what a pass of a RedisEnterpriseCluster makes before it
// reads: the Secret whose password the nodes share and, with spec.tls,
// the certificate.
type redisPrepared struct {
	secret *corev1.Secret
	// secretFailure, when set, says that the Secret is missing while the
	// cluster has nodes (SecretMissing): the pass applies nothing, and
	// secret holds the password remembered, if any.
	secretFailure *conditions.Failure
	// tls is spec.tls's Secret as read; tlsFailure, when set, says why it
	// cannot serve: the pass applies nothing, and tls is what the nodes
	// can still be reached with (the certificate issued before, or the
	// TLS remembered), if anything.
	tls        *redisTLS
	tlsFailure *conditions.Failure
}

// redisObservation is what a pass read of a RedisEnterpriseCluster: its
// StatefulSet as the cache has it (nil when none), every node and what
// Redis said, how long the recorded primary has been down, and the
// backups.
type redisObservation struct {
	sts            *appsv1.StatefulSet
	nodes          []redisNode
	primaryDownFor time.Duration
	// redis reaches the nodes, as they were observed.
	redis   redisnode.Nodes
	backups redisBackupsSeen
}

// redisPlan is the step a pass plans: none when it waits for the
// StatefulSet (waiting is then why).
type redisPlan struct {
	decision redisenterprisecluster.Decision
	waiting  string
	// backups: the step may go on to the backups (not a safety step's).
	backups bool
	// hibernate: spec.hibernate is honoured: no step at all, and no
	// backup, while the pods stop and until the cluster wakes.
	hibernate bool
	// request is the switchover request the plan answers ("" when none
	// is pending).
	request string
	// held: the decision is a lapse of a Running cluster seen by one look
	// only (see lapses): the status stays as it is, and the pass does
	// nothing but have the nodes reload their certificates where due.
	held bool
}

// redisStepped is what a step leaves for the status: the primary, the
// cluster's state and each node's role.
type redisStepped struct {
	primary string
	state   redisv1alpha1.ClusterState
	nodes   []redisv1alpha1.NodeStatus
	// switchover is the outcome of the switchover request the step
	// answered (nil when it answered none).
	switchover *switchover.Status
	// configRefused are the values of spec.redisConfig a node refused;
	// configStale, by node, the parameters still at other values.
	configRefused []string
	configStale   map[string][]string
	// growth is the step taken toward spec.persistentSpec.volumeSize
	// (see stateful.GrowClaims); nil when none was looked at.
	growth *resources.ClaimGrowth
	// backupRequest is the backup the pass started, and the request
	// (BackupNowAnnotation) it handled: a backup started for it, or
	// refused.
	backupRequest handledRequest
}

// persistent reports whether the nodes keep their data on claims.
func persistent(spec *redisv1alpha1.RedisEnterpriseClusterSpec) bool {
	return spec.PersistentSpec != nil && spec.PersistentSpec.Enabled.True()
}

// growClaims grows the nodes' claims toward spec.persistentSpec.volumeSize,
// one at a time, beside the step s, and comes back soon while one grows.
func growClaims(ctx context.Context, c engine.Clients, o *redisv1alpha1.RedisEnterpriseCluster, s engine.Step) (*resources.ClaimGrowth, engine.Step, error) {
	claims := stateful.Claims{Namespace: o.Namespace, StatefulSet: o.Name, Volume: redisenterprisecluster.DataVolume,
		Selector: redisenterprisecluster.Selector(o.Name)}
	g, err := stateful.GrowClaims(ctx, c.Client, c.API, claims, redisenterprisecluster.VolumeSize(&o.Spec))
	if err != nil {
		return nil, s, err
	}
	if g.Expanding() && (s.RequeueAfter == 0 || s.RequeueAfter > stateful.GrowthInterval) {
		s.RequeueAfter = stateful.GrowthInterval
	}
	return &g, s, nil
}

// with returns the connector of one pass, with its clients.
func (ops *redisOps) with(c engine.Clients) *redisOps {
	pass := *ops
	pass.client, pass.apiReader = c.Client, c.API
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
				stateful.PodReady(oldPod) != stateful.PodReady(newPod) || oldPod.Status.PodIP != newPod.Status.PodIP ||
				oldPod.Labels[redisenterprisecluster.RoleLabel] != newPod.Labels[redisenterprisecluster.RoleLabel]
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// prepare makes the cluster's Secret (see secret) and, with spec.tls,
// reads its certificate (see prepareTLS). Where either fails for a reason
// the status gives, the pass goes on with what the nodes were last
// reached with (remembered), for the safety steps.
func (ops *redisOps) prepare(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (redisPrepared, error) {
	var prepared redisPrepared
	s, err := ops.secret(ctx, o, gvk)
	if f, ok := errors.AsType[*conditions.Failure](err); ok {
		prepared.secretFailure = f
		s = &corev1.Secret{Data: map[string][]byte{redisenterprisecluster.SecretPassword: []byte(ops.remembered.get(o).password)}}
	} else if err != nil {
		return redisPrepared{}, err
	}
	prepared.secret = s
	if prepared.secretFailure == nil {
		ops.remembered.keep(o, string(s.Data[redisenterprisecluster.SecretPassword]), nil)
	}
	if o.Spec.TLS == nil {
		ops.consoleCertificate(ctx, o, gvk)
		return prepared, nil
	}
	prepared.tls, err = ops.prepareTLS(ctx, o, gvk)
	if f, ok := errors.AsType[*conditions.Failure](err); ok {
		prepared.tlsFailure = f
		if prepared.tls == nil {
			prepared.tls = ops.remembered.get(o).tls
		}
		return prepared, nil
	}
	if err == nil {
		ops.remembered.keep(o, "", prepared.tls)
	}
	return prepared, err
}

// secret returns the cluster's Secret, creating it with a new password the
// first time. The password is generated once: a Secret found in the cache
// or, when the cache has none, on the API server is never given another,
// and one missing while the cluster has nodes is not made again (a
// SecretMissing failure, see refuseToMake).
func (ops *redisOps) secret(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	s, err := stateful.ReadSecret(ctx, ops.client, ops.apiReader, key)
	if err == nil || !apierrors.IsNotFound(err) {
		return s, err
	}
	if err := ops.refuseToMake(ctx, o, passwordMissing(o)); err != nil {
		return nil, err
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
			Labels: resources.Labels(redisenterprisecluster.Selector(o.Name)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: *ref.APIVersion, Kind: *ref.Kind, Name: *ref.Name, UID: *ref.UID,
				Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{redisenterprisecluster.SecretUsername: []byte(redisenterprisecluster.Username(&o.Spec)), redisenterprisecluster.SecretPassword: []byte(password)},
	}
	if err := ops.client.Create(ctx, s, client.FieldOwner(engine.FieldOwner(redisenterprisecluster.KindName))); err != nil {
		if apierrors.IsAlreadyExists(err) {
			err = ops.apiReader.Get(ctx, key, s)
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
	plan redisenterprisecluster.Node
	pod  *corev1.Pod
	// stranded is the pod's claim whose volume is stranded on a node
	// that is gone or cordoned (plan.Stranded says which).
	stranded *corev1.PersistentVolumeClaim
	// tls is what a node that serves TLS said of it.
	tls nodeTLS
	// usage is what the node's INFO said of its load and persistence;
	// keys, how many keys it holds.
	usage redisnode.Usage
	keys  int64
	// lagSeconds is, for a replica its primary lists, how long ago the
	// primary last heard from it; -1 when unknown.
	lagSeconds float64
	// lastIO is, for a replica whose link is up, how long ago its
	// primary last sent it anything (whole seconds); -1 when unknown.
	lastIO time.Duration
}

// addr is the address of the node's Redis port ("" when its pod has no
// address).
func (n *redisNode) addr() string {
	if n == nil || n.pod == nil || n.pod.Status.PodIP == "" {
		return ""
	}
	return redisnode.Addr(n.pod.Status.PodIP, redisenterprisecluster.Port)
}

// observe reads the cluster's StatefulSet and pods from the cache and asks
// every node for its replication state (see observeNodes), and reads its
// backups.
func (ops *redisOps) observe(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, prepared redisPrepared) (redisObservation, error) {
	var seen redisObservation
	sts := &appsv1.StatefulSet{}
	switch err := ops.client.Get(ctx, client.ObjectKeyFromObject(o), sts); {
	case err == nil:
		seen.sts = sts
	case !apierrors.IsNotFound(err):
		return seen, fmt.Errorf("get StatefulSet %s: %w", o.Name, err)
	}
	pods := &corev1.PodList{}
	if err := ops.client.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels(redisenterprisecluster.Selector(o.Name))); err != nil {
		return seen, fmt.Errorf("list pods: %w", err)
	}
	var clientTLS *tls.Config
	if prepared.tls != nil {
		clientTLS = prepared.tls.client
	}
	seen.redis = ops.nodes(string(prepared.secret.Data[redisenterprisecluster.SecretPassword]), clientTLS, plainNodes(clientTLS, pods.Items))
	var err error
	if seen.nodes, err = ops.observeNodes(ctx, o, pods.Items, seen.redis); err != nil {
		return seen, err
	}
	ops.observeConfig(ctx, o, seen.nodes, seen.redis)
	ops.gauges.record(client.ObjectKeyFromObject(o), redisSampleOf(o.Status.Primary, seen.nodes))
	// A hibernated cluster's primary is not down: its window starts
	// again when it wakes, from the first pass that misses it.
	downNow := !redisenterprisecluster.Hibernating(&o.Spec) && primaryDownNow(o.Status.Primary, seen.nodes)
	seen.primaryDownFor = ops.down.observe(client.ObjectKeyFromObject(o), o.Status.Primary, downNow, unheardFor(o.Status.Primary, seen.nodes), ops.clock.Now())
	seen.backups, err = ops.backups.observe(ctx, ops.client, o)
	return seen, err
}

// plan decides the next step (redisenterprisecluster.Plan) from what the pass observed and
// the StatefulSet as this pass applied it, else as observed. With
// SafetySteps, it plans only a failover or a fence.
func (ops *redisOps) plan(o *redisv1alpha1.RedisEnterpriseCluster, seen *redisObservation, applied engine.Observed, scope engine.Scope) redisPlan {
	sts, ok := applied[engine.ChildKey("StatefulSet", o.Name)].(*appsv1.StatefulSet)
	if !ok {
		sts = seen.sts
	}
	if redisenterprisecluster.Hibernating(&o.Spec) {
		return redisPlan{hibernate: true}
	}
	if sts == nil {
		return redisPlan{waiting: "waiting for the StatefulSet"}
	}
	request, target := switchover.Pending(o.Annotations, o.Status.LastSwitchover)
	in := redisenterprisecluster.Observation{
		Want:           redisenterprisecluster.Nodes(&o.Spec),
		Recorded:       o.Status.Primary,
		FailoverAfter:  ops.failoverAfter,
		PrimaryDownFor: seen.primaryDownFor,
		SafetyOnly:     scope == engine.SafetySteps,
		Chosen:         o.Annotations[redisv1alpha1.ElectAnnotation],
		Switchover:     target,
		// The StatefulSet controller has seen the latest template: the
		// pods' revisions say which run it.
		Settled: sts.Status.ObservedGeneration >= sts.Generation,
	}
	for _, n := range seen.nodes {
		node := n.plan
		if n.pod != nil {
			node.Current = sts.Status.UpdateRevision == "" || n.pod.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision
		}
		in.Nodes = append(in.Nodes, node)
	}
	d := redisenterprisecluster.Plan(in)
	// A lapse of a Running cluster is reported once a second look finds
	// it too (see lapses); a switchover refused is answered at once.
	lapsed := o.Status.State == redisv1alpha1.StateRunning && d.State != redisv1alpha1.StateRunning &&
		d.Action == redisenterprisecluster.None && !d.Failure && request == ""
	if ops.lapses.hold(client.ObjectKeyFromObject(o), lapsed, ops.clock.Now()) {
		return redisPlan{decision: d, held: true, backups: scope == engine.AllSteps}
	}
	return redisPlan{decision: d, backups: scope == engine.AllSteps, request: request}
}

// act takes the planned step, has the nodes reload their certificates
// where due (see reloadCertificates), and then, on a Running cluster, its
// backups (see redisBackups.step). It returns what the status reports of the
// nodes (nil when no step was planned or it failed).
func (ops *redisOps) act(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind, pass *redisPass) (*redisStepped, engine.Step, error) {
	plan, seen := pass.Decision, &pass.Observed
	if plan.hibernate {
		return nil, hibernationStep(seen.nodes), nil
	}
	if plan.waiting != "" {
		return nil, engine.Step{Waiting: plan.waiting, RequeueAfter: redisWaitInterval}, nil
	}
	if plan.held {
		ctrl.LoggerFrom(ctx).V(1).Info("Lapse seen once, looking again before the status says so", "state", plan.decision.State, "reason", plan.decision.Message)
		if plan.backups {
			ops.reloadCertificates(ctx, pass.Prepared.tls, seen.nodes, seen.redis)
		}
		return nil, engine.Step{RequeueAfter: redisWaitInterval}, nil
	}
	stepped, s, err := ops.take(ctx, o, plan.decision, plan.request, seen)
	if stepped != nil {
		stepped.configRefused, stepped.configStale = ops.configState(o, plan.decision, seen.nodes)
	}
	if plan.backups {
		// Converged or not: a reload changes no data.
		ops.reloadCertificates(ctx, pass.Prepared.tls, seen.nodes, seen.redis)
	}
	if err != nil || !plan.backups || !s.Converged() {
		return stepped, s, err
	}
	b, handled, err := ops.backups.step(ctx, ops.client, o, gvk, &seen.backups, ops.clock.Now())
	if stepped != nil {
		stepped.backupRequest = handled
	}
	if b.RequeueAfter == 0 || b.RequeueAfter > s.RequeueAfter {
		b.RequeueAfter = s.RequeueAfter
	}
	return stepped, b, err
}

// take claims the step d (see claim) and takes it on the nodes. request
// is the switchover request d answers, if any: a handover it asks for is
// recorded as handled with the claim, before a node is touched, so that
// it is taken once whatever happens next.
func (ops *redisOps) take(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, d redisenterprisecluster.Decision, request string, seen *redisObservation) (*redisStepped, engine.Step, error) {
	log := ctrl.LoggerFrom(ctx)
	if d.Action != redisenterprisecluster.None {
		log.Info("Taking step", "step", d.Action, "node", d.Target, "reason", d.Message)
	} else {
		log.V(1).Info("No step", "state", d.State, "reason", d.Message)
	}
	// The step labels pods: it works on a copy of the nodes observed.
	nodes := slices.Clone(seen.nodes)
	previous := o.Status.Primary
	answered := switchoverRecord(request, d, previous, metav1.NewTime(ops.clock.Now()))
	if d.Action != redisenterprisecluster.None && d.Action != redisenterprisecluster.Record {
		var claimed *switchover.Status
		if d.Switchover {
			claimed = answered
		}
		if err := ops.claim(ctx, o, cmp.Or(d.Primary, previous), d.ChangeReason(), "Taking the step: "+d.Message, claimed); err != nil {
			return nil, engine.Step{}, fmt.Errorf("claim the step %s %s: %w", d.Action, d.Target, err)
		}
		if made, err := ops.change(ctx, o, previous, d, nodes, seen.redis); err != nil {
			err = fmt.Errorf("%s %s: %w", d.Action, d.Target, err)
			undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
			defer cancel()
			if previous != o.Status.Primary && !made && !madePrimary(undoCtx, seen.redis, nodes, o.Status.Primary) {
				// The status must not name a primary the step did not
				// make; a node made a primary before the error is found
				// by the next pass's observation. One the step did make
				// stays recorded: its old primary follows it now, and the
				// labels and replicas the error left behind are the next
				// pass's steps. Recorded back, the old primary would be
				// a primary that says it is a replica, for a failover
				// that waits for every node to answer.
				// Even when the pass was cancelled (the operator stopping):
				// the undo is what keeps the status true. A node that says
				// it is the primary now was made one, though the answer
				// was lost (the pass stopped as the command took effect):
				// its claim stays.
				var failed *switchover.Status
				if claimed != nil {
					failed = ptr.To(*claimed)
					failed.Outcome, failed.Message = switchover.Failed, fmt.Sprintf("The primary stays %s: %v", previous, err)
				}
				undo := ops.claim(undoCtx, o, previous, "", "The step failed: "+err.Error(), failed)
				if undo != nil {
					err = errors.Join(err, fmt.Errorf("restore the recorded primary %s: %w", previous, undo))
				}
			}
			if errors.Is(err, stateful.ErrDisruptionRefused) {
				stepped := &redisStepped{primary: o.Status.Primary, state: d.State, nodes: nodeStatuses(nodes, o.Status.Primary)}
				return stepped, engine.Step{Waiting: fmt.Sprintf("Waiting to replace the pod of %s: %v", d.Target, stateful.ErrDisruptionRefused), RequeueAfter: redisWaitInterval}, nil
			}
			return nil, engine.Step{}, err
		}
	}
	primary := cmp.Or(d.Primary, o.Status.Primary)
	stepped := &redisStepped{primary: primary, state: d.State, nodes: nodeStatuses(nodes, primary), switchover: answered}
	if d.Switchover {
		stepped.switchover = ptr.To(*answered)
		stepped.switchover.Outcome = switchover.Done
		stepped.switchover.Message = fmt.Sprintf("Moved the primary from %s to %s", previous, d.Target)
	}
	notice := refusedNotice(answered)
	switch {
	case d.Failure:
		return stepped, engine.Step{Failure: &conditions.Failure{Reason: redisv1alpha1.ReasonNoPrimary, Message: d.Message}, Notices: notice, RequeueAfter: redisWaitInterval}, nil
	case d.Action != redisenterprisecluster.None:
		return stepped, engine.Step{Took: d.Message, Cause: d.Cause, Event: redisStepEvent(d.Action, o.Spec.Restore != nil && previous == ""), Notices: notice, RequeueAfter: redisStepInterval}, nil
	case d.Waiting:
		return stepped, engine.Step{Waiting: d.Message, Cause: d.Cause, Notices: notice, RequeueAfter: redisWaitInterval}, nil
	}
	return stepped, engine.Step{Notices: notice, RequeueAfter: redisRecheck}, nil
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
//
// A claim also records last, when it is not nil, as the switchover request
// handled. A claim that changes the primary is the one place that records
// it in status.primaryHistory, with reason (see
// redisenterprisecluster.Decision.ChangeReason); an empty reason takes the
// change back (status.RedisPrimaryHistory): a step that failed.
func (ops *redisOps) claim(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, primary, reason, message string, last *switchover.Status) error {
	claimed := o.DeepCopy()
	claimed.Status.Primary = primary
	if last != nil {
		claimed.Status.LastSwitchover = last
	}
	if primary != o.Status.Primary {
		now := metav1.NewTime(ops.clock.Now())
		claimed.Status.State = redisv1alpha1.StateInitializing
		claimed.Status.PrimaryHistory = status.RedisPrimaryHistory(o.Status.PrimaryHistory, o.Status.Primary, primary, reason, now)
		status.RedisEnterpriseCluster(&claimed.Status, o.Generation, "", message, "", nil, now)
	}
	if err := ops.client.Status().Patch(ctx, claimed, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	o.ResourceVersion = claimed.ResourceVersion
	o.Status = claimed.Status
	return nil
}

// madePrimary reports whether the node named name, not a primary when the
// pass observed it, answers now that it is one.
func madePrimary(ctx context.Context, redis redisnode.Nodes, nodes []redisNode, name string) bool {
	for i := range nodes {
		if nodes[i].plan.Name == name && !nodes[i].plan.Primary && nodes[i].addr() != "" {
			info, err := redis.Info(ctx, nodes[i].addr())
			return err == nil && info.Primary
		}
	}
	return false
}

// primaryDownNow reports whether the recorded primary is down in this
// observation: its pod gone, terminating or not ready, or Redis silent.
func primaryDownNow(recorded string, nodes []redisNode) bool {
	if recorded == "" {
		return false
	}
	for _, n := range nodes {
		if n.plan.Name == recorded {
			return n.plan.Pod != redisenterprisecluster.PodReady || !n.plan.Answered
		}
	}
	return true
}

// unheardFor is how long, by its replicas' account, the recorded primary
// has sent none of them anything: the least of their
// master_last_io_seconds_ago, when every node that answered as a replica
// of it has its link up (the primary pings them every second). Zero when
// any has not, or none answered: no evidence of how long it has been
// silent.
func unheardFor(recorded string, nodes []redisNode) time.Duration {
	var least time.Duration = -1
	for _, n := range nodes {
		if n.plan.Name == recorded || !n.plan.Answered || n.plan.Primary || n.plan.Follows != recorded {
			continue
		}
		if !n.plan.LinkUp || n.lastIO < 0 {
			return 0
		}
		if least < 0 || n.lastIO < least {
			least = n.lastIO
		}
	}
	return max(least, 0)
}

// observeNodes reads the nodes' pods and asks every pod with an address
// for its replication state, all at once. Whether a pod runs the latest
// template is the plan's to say, from the StatefulSet it applied.
func (ops *redisOps) observeNodes(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, pods []corev1.Pod, redis redisnode.Nodes) ([]redisNode, error) {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	names := []string{}
	for i := range redisenterprisecluster.Nodes(&o.Spec) {
		names = append(names, redisenterprisecluster.PodName(o.Name, i))
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
		n.plan = redisenterprisecluster.Node{Name: name, Pod: redisenterprisecluster.PodMissing}
		n.lagSeconds = -1
		n.lastIO = -1
		pod := byName[name]
		if pod == nil {
			continue
		}
		n.pod = pod
		n.plan.RoleLabel = pod.Labels[redisenterprisecluster.RoleLabel]
		n.plan.TLS = redisenterprisecluster.MountsTLS(pod)
		claim, why, err := stateful.StrandedClaim(ctx, ops.apiReader, pod)
		if err != nil {
			return nil, err
		}
		n.stranded, n.plan.Stranded = claim, why
		if n.plan.Cordoned, err = stateful.Cordoned(ctx, ops.client, pod.Spec.NodeName); err != nil {
			return nil, fmt.Errorf("get node %s: %w", pod.Spec.NodeName, err)
		}
		switch {
		case !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			// Still asked: a terminating primary that answers is still
			// handing its last writes to its replicas.
			n.plan.Pod = redisenterprisecluster.PodTerminating
		case stateful.PodReady(pod):
			n.plan.Pod = redisenterprisecluster.PodReady
		default:
			n.plan.Pod = redisenterprisecluster.PodNotReady
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
			n.usage, n.keys = info.Usage, info.Keys
			if n.plan.TLS {
				n.tls = observeTLS(ctx, redis, n.addr())
			}
			n.plan.Primary, n.plan.Offset = info.Primary, info.Offset
			n.plan.Position = positionOf(info, pod)
			lags[i] = info.ReplicaLag
			if !info.Primary {
				hosts[i] = info.PrimaryHost
				n.plan.LinkUp = info.LinkUp
				if info.LinkUp {
					n.lastIO = info.LastIO
				}
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
		if hosts[i] == "" || redisenterprisecluster.FollowsNoPrimary(hosts[i]) {
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
				if ok {
					nodes[i].lagSeconds = lag.Seconds()
				}
			}
		}
	}
	return nodes, ctx.Err()
}

// positionOf is how far the node of pod got in the history of writes:
// what it answers, once it is a primary or has replicated something since
// it started; before that, what its lineage container read from its data
// folder when the pod started, as long as Redis has not restarted in the
// pod since (the container does not run again).
func positionOf(info redisnode.Info, pod *corev1.Pod) redisenterprisecluster.Position {
	if info.Primary || info.Offset > 0 {
		return redisenterprisecluster.Position{Known: true, ReplID: info.ReplID, Offset: info.Offset,
			ReplID2: info.ReplID2, SecondOffset: info.SecondOffset, Source: redisenterprisecluster.SourceLive}
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == redisenterprisecluster.ContainerName && s.RestartCount > 0 {
			return redisenterprisecluster.Position{Source: "Redis restarted in its pod since its data folder was read"}
		}
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name != redisbackup.LineageContainerName || s.State.Terminated == nil {
			continue
		}
		l, err := redisbackup.ParseLineage(s.State.Terminated.Message)
		switch {
		case err != nil:
			return redisenterprisecluster.Position{Source: "its lineage container's report cannot be read: " + err.Error()}
		case !l.Known:
			return redisenterprisecluster.Position{Source: l.Why}
		}
		return redisenterprisecluster.Position{Known: true, Empty: l.Empty, ReplID: l.ReplicationID, Offset: l.Offset, SecondOffset: -1, Source: redisenterprisecluster.SourceDisk}
	}
	return redisenterprisecluster.Position{Source: "its pod has no lineage report"}
}

// change performs the planned step on the nodes. recorded is the primary
// before it (the status already names the one the step claimed). made
// reports, with an error, that the step had already made d.Primary the
// primary (and, for a handover, the old primary its replica) when the
// error came.
func (ops *redisOps) change(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, recorded string, d redisenterprisecluster.Decision, nodes []redisNode, redis redisnode.Nodes) (made bool, err error) {
	node := func(name string) *redisNode {
		for i := range nodes {
			if nodes[i].plan.Name == name {
				return &nodes[i]
			}
		}
		return nil
	}
	host := redisenterprisecluster.NodeHost(o.Name, d.Primary)
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
	case redisenterprisecluster.None, redisenterprisecluster.Record:
		return false, nil
	case redisenterprisecluster.Promote:
		if !node(d.Target).plan.Primary {
			if err := redis.Promote(ctx, node(d.Target).addr()); err != nil {
				return false, err
			}
		}
		// A replica not repointed now is at the next pass.
		return true, repoint()
	case redisenterprisecluster.Failover:
		if err := ops.fence(ctx, node(d.Fence), d.Target, host, primaryTLS, redis); err != nil {
			return false, fmt.Errorf("fence the old primary %s: %w", d.Fence, err)
		}
		if err := redis.Promote(ctx, node(d.Target).addr()); err != nil {
			return false, err
		}
		if err := ops.label(ctx, node(d.Target), redisv1alpha1.RolePrimary); err != nil {
			return true, err
		}
		return true, repoint()
	case redisenterprisecluster.Repoint:
		return false, repoint()
	case redisenterprisecluster.Configure:
		return false, ops.configure(ctx, o, node(d.Target), redis)
	case redisenterprisecluster.KillScript:
		err := redis.KillScript(ctx, node(d.Target).addr())
		if errors.Is(err, redisnode.ErrUnkillable) {
			// Not an error of the step: the primary stays down, and the
			// failover follows once the window has passed.
			ctrl.LoggerFrom(ctx).Info("The busy primary's script cannot be killed: it wrote", "node", d.Target)
			return false, nil
		}
		return false, err
	case redisenterprisecluster.Label:
		for name, role := range d.Labels {
			if err := ops.label(ctx, node(name), role); err != nil {
				return false, err
			}
		}
		return false, nil
	case redisenterprisecluster.DeletePod:
		pod := node(d.Target).pod
		return false, stateful.EvictPodOfUID(ctx, ops.client, pod.Namespace, pod.Name, pod.UID)
	case redisenterprisecluster.ReplaceVolume:
		n := node(d.Target)
		return false, stateful.DeleteStranded(ctx, ops.client, o.Namespace, n.stranded.Name, string(n.stranded.UID), n.pod.Name, string(n.pod.UID))
	case redisenterprisecluster.Handover:
		if err := handover(ctx, redis, node(recorded), node(d.Target)); err != nil {
			return false, err
		}
		// The Services follow the primary at once.
		if err := ops.label(ctx, node(recorded), redisv1alpha1.RoleReplica); err != nil {
			return true, err
		}
		if err := ops.label(ctx, node(d.Target), redisv1alpha1.RolePrimary); err != nil {
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
func (ops *redisOps) fence(ctx context.Context, old *redisNode, newName, newHost string, newTLS bool, redis redisnode.Nodes) error {
	if old == nil || old.pod == nil {
		return nil
	}
	if old.pod.DeletionTimestamp.IsZero() && old.plan.RoleLabel == redisv1alpha1.RolePrimary {
		if err := ops.label(ctx, old, redisv1alpha1.RoleReplica); err != nil {
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
func (ops *redisOps) label(ctx context.Context, n *redisNode, role string) error {
	if n == nil || n.pod == nil || n.plan.RoleLabel == role {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, redisenterprisecluster.RoleLabel, role)
	if err := ops.client.Patch(ctx, n.pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label pod %s: %w", n.plan.Name, client.IgnoreNotFound(err))
	}
	n.plan.RoleLabel = role
	return nil
}

// handover moves the primary from old to target without losing a write,
// by Redis's own coordinated failover (see redisnode.Client.Failover):
// the old primary pauses writes, waits for target to reach its offset
// and only then makes itself target's replica, target taking over; when
// target does not catch up within handoverTimeout, the old primary stays
// the primary and takes writes again, and handover fails. The old
// primary names target as it lists it among its replicas (its pod's IP,
// and the port target announced), and follows it at that address.
//
// An old primary that serves TLS reaches target in target's scheme
// (tls-replication, as follow sets it). One that does not (a cluster on
// its way to TLS) cannot reach a target that serves TLS alone: it makes
// itself a replica once target has every write, but never gets to ask it
// to take over, so the operator promotes target. The old primary, its
// writes still paused, waits until its pod, on the old template, is made
// again.
func handover(ctx context.Context, redis redisnode.Nodes, old, target *redisNode) error {
	ctx, cancel := context.WithTimeout(ctx, handoverTimeout+redisnode.FailoverMargin+takeoverWithin+4*(redisnode.DialTimeout+redisnode.CallTimeout))
	defer cancel()
	if old.addr() == "" || target.addr() == "" {
		return errors.New("the old primary or the new one has no address")
	}
	oldAddr, ip := old.addr(), target.pod.Status.PodIP
	listed, err := redis.Info(ctx, oldAddr)
	if err != nil {
		return err
	}
	port, ok := listed.ReplicaPorts[ip]
	if !ok {
		return fmt.Errorf("the primary %s does not list %s (%s) among its replicas", old.plan.Name, target.plan.Name, ip)
	}
	if r, ok := redis.(replicationScheme); ok && old.plan.TLS {
		if err := r.SetReplicationTLS(ctx, oldAddr, target.plan.TLS); err != nil {
			return fmt.Errorf("set the old primary's tls-replication: %w", err)
		}
	}
	if err := redis.Failover(ctx, oldAddr, ip, port, handoverTimeout); err != nil {
		return fmt.Errorf("fail over to %s: %w", target.plan.Name, err)
	}
	if !old.plan.TLS && target.plan.TLS {
		if err := redis.Promote(ctx, target.addr()); err != nil {
			return fmt.Errorf("promote %s, which the old primary cannot reach: %w", target.plan.Name, err)
		}
		return nil
	}
	return tookOver(ctx, redis, target)
}

// tookOver waits, for at most takeoverWithin, until target says it is a
// primary: the old primary, a replica now, has asked it to take over.
func tookOver(ctx context.Context, redis redisnode.Nodes, target *redisNode) error {
	ctx, cancel := context.WithTimeout(ctx, takeoverWithin)
	defer cancel()
	for {
		info, err := redis.Info(ctx, target.addr())
		if err == nil && info.Primary {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the old primary made itself a replica of %s, which has not taken over (it holds every write: the old primary takes none meanwhile)", target.plan.Name)
		case <-time.After(takeoverPoll):
		}
	}
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
		ready := n.plan.Pod == redisenterprisecluster.PodReady && n.plan.Answered
		if n.plan.Name == primary {
			s.Healthy = ready && n.plan.Primary
		} else {
			s.Healthy = ready && !n.plan.Primary && n.plan.Follows == primary && redisenterprisecluster.InSync(n.plan)
		}
		out = append(out, s)
	}
	return out
}
