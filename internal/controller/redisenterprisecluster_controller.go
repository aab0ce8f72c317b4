package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
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
// The role labels and the rolling update, pod by pod.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch;delete

// Timeouts of the calls to Redis: a node that does not answer within them
// counts as not answering in this pass.
const (
	redisDialTimeout = time.Second
	redisCallTimeout = time.Second
	// handoverTimeout bounds how long writes stay paused on the old
	// primary while the new one catches up.
	handoverTimeout = 5 * time.Second
	// redisStepInterval is how soon a pass follows a step; redisWaitInterval
	// how often a waiting cluster is looked at; redisRecheck how often a
	// running one is (Redis changes without an event the operator sees).
	redisStepInterval = 200 * time.Millisecond
	redisWaitInterval = time.Second
	redisRecheck      = 10 * time.Second
	// passwordLength is the length of a generated password (letters and
	// digits: about 190 bits).
	passwordLength = 32
)

// redisConnector is what the RedisEnterpriseCluster controller needs of the
// manager beyond the engine: a client to create the Secret, label and
// delete pods, and a reader that is not the cache. Set when the controller
// is set up (watch).
type redisConnector struct {
	client    client.Client
	apiReader client.Reader
}

// redisEnterpriseClusterKind reconciles RedisEnterpriseCluster: the
// declarative children through the engine, the roles of the Redis nodes
// through Redis, one planned step a pass (rec.Plan).
func redisEnterpriseClusterKind() kind[*redisv1alpha1.RedisEnterpriseCluster] {
	gvk := redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster")
	x := &redisConnector{}
	return kind[*redisv1alpha1.RedisEnterpriseCluster]{
		name:      rec.KindName,
		gvk:       gvk,
		newObject: func() *redisv1alpha1.RedisEnterpriseCluster { return &redisv1alpha1.RedisEnterpriseCluster{} },
		owns: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.StatefulSet{},
			&policyv1.PodDisruptionBudget{}},
		lookup: func(ctx context.Context, r client.Reader, o *redisv1alpha1.RedisEnterpriseCluster, in observed) error {
			s, err := x.secret(ctx, r, o, gvk)
			if err != nil {
				return err
			}
			in[childKey("Secret", o.Name)] = s
			return nil
		},
		build: func(o *redisv1alpha1.RedisEnterpriseCluster, in observed) ([]runtime.ApplyConfiguration, error) {
			input := rec.Input{Primary: o.Status.Primary}
			if s, ok := in[childKey("Secret", o.Name)].(*corev1.Secret); ok {
				input.Password = string(s.Data[rec.SecretPassword])
			}
			c, err := rec.Build(resources.OwnerOf(o, gvk), &o.Spec, input)
			if err != nil {
				return nil, err
			}
			return c.Objects(), nil
		},
		step: x.step,
		setStatus: func(o *redisv1alpha1.RedisEnterpriseCluster, pass report, now metav1.Time) {
			status.RedisEnterpriseCluster(&o.Status, o.Generation, pass.step.Took, pass.step.Waiting, pass.failure, now)
		},
		watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			x.client, x.apiReader = mgr.GetClient(), mgr.GetAPIReader()
			return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podOwner(rec.KindName)),
				builder.WithPredicates(redisPodChanges())), nil
		},
	}
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
func (x *redisConnector) secret(ctx context.Context, r client.Reader, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	s := &corev1.Secret{}
	err := r.Get(ctx, key, s)
	if err == nil || !apierrors.IsNotFound(err) || x.client == nil {
		if apierrors.IsNotFound(err) {
			// Without a manager (no client to create it), the build
			// leaves the password out.
			return s, nil
		}
		return s, err
	}
	if err := x.apiReader.Get(ctx, key, s); err == nil || !apierrors.IsNotFound(err) {
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
	// host is the primary host Redis reported (for a replica).
	host string
}

// step looks at every node, plans the next step (rec.Plan) and takes it.
func (x *redisConnector) step(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, children observed) (Step, error) {
	if x.client == nil {
		return Step{}, errors.New("the controller was set up without a client")
	}
	secret, _ := children[childKey("Secret", o.Name)].(*corev1.Secret)
	sts, _ := children[childKey("StatefulSet", o.Name)].(*appsv1.StatefulSet)
	if secret == nil || sts == nil {
		return Step{Waiting: "waiting for the Secret and the StatefulSet", RequeueAfter: redisWaitInterval}, nil
	}
	password := string(secret.Data[rec.SecretPassword])
	nodes, err := x.observe(ctx, o, sts, password)
	if err != nil {
		return Step{}, err
	}
	planned := make([]rec.Node, len(nodes))
	for i, n := range nodes {
		planned[i] = n.plan
	}
	d := rec.Plan(rec.Nodes(&o.Spec), o.Status.Primary, planned)
	log := ctrl.LoggerFrom(ctx)
	if d.Action != rec.None {
		log.Info("Taking step", "step", d.Action, "node", d.Target, "reason", d.Reason)
	} else {
		log.V(1).Info("No step", "state", d.State, "reason", d.Reason)
	}
	if err := x.take(ctx, o, d, nodes, password); err != nil {
		return Step{}, fmt.Errorf("%s %s: %w", d.Action, d.Target, err)
	}
	if d.Primary != "" {
		o.Status.Primary = d.Primary
	}
	o.Status.State = d.State
	o.Status.Nodes = nodeStatuses(nodes, o.Status.Primary)
	switch {
	case d.Failure:
		return Step{Failure: &status.Failure{Reason: redisv1alpha1.ReasonNoPrimary, Message: d.Reason}, RequeueAfter: redisWaitInterval}, nil
	case d.Action != rec.None:
		return Step{Took: d.Reason, RequeueAfter: redisStepInterval}, nil
	case d.Waiting:
		return Step{Waiting: d.Reason, RequeueAfter: redisWaitInterval}, nil
	}
	return Step{RequeueAfter: redisRecheck}, nil
}

// observe reads the nodes' pods from the cache and asks every pod with an
// address for its replication state, all at once.
func (x *redisConnector) observe(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, sts *appsv1.StatefulSet, password string) ([]redisNode, error) {
	pods := &corev1.PodList{}
	if err := x.client.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels(rec.Selector(o.Name))); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	names := []string{}
	for i := range rec.Nodes(&o.Spec) {
		names = append(names, rec.PodName(o.Name, i))
	}
	nodes := make([]redisNode, len(names))
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
		if pod.Status.PodIP == "" {
			continue
		}
		wg.Go(func() {
			info, err := replicationInfo(ctx, pod.Status.PodIP, password)
			if err != nil {
				return
			}
			n.plan.Answered = true
			n.plan.Primary = info["role"] == "master"
			if n.plan.Primary {
				n.plan.Offset, _ = strconv.ParseInt(info["master_repl_offset"], 10, 64)
				return
			}
			n.host = info["master_host"]
			n.plan.LinkUp = info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0"
			n.plan.Offset, _ = strconv.ParseInt(info["slave_repl_offset"], 10, 64)
		})
	}
	wg.Wait()
	// Name the primary each replica follows, by host name or address.
	for i := range nodes {
		if nodes[i].host == "" {
			continue
		}
		for _, other := range nodes {
			if other.pod != nil && (strings.HasPrefix(nodes[i].host, other.plan.Name+".") || nodes[i].host == other.pod.Status.PodIP) {
				nodes[i].plan.Follows = other.plan.Name
			}
		}
	}
	return nodes, ctx.Err()
}

// take performs the planned step.
func (x *redisConnector) take(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, d rec.Decision, nodes []redisNode, password string) error {
	node := func(name string) *redisNode {
		for i := range nodes {
			if nodes[i].plan.Name == name {
				return &nodes[i]
			}
		}
		return nil
	}
	primaryHost := func(name string) string { return rec.NodeHost(o.Name, o.Namespace, name) }
	switch d.Action {
	case rec.None, rec.Record:
		return nil
	case rec.Promote:
		if node(d.Target).plan.Primary {
			return nil
		}
		return redisDo(ctx, node(d.Target).pod.Status.PodIP, password, "REPLICAOF", "NO", "ONE")
	case rec.Repoint:
		return redisDo(ctx, node(d.Target).pod.Status.PodIP, password, "REPLICAOF", primaryHost(d.Primary), strconv.Itoa(rec.Port))
	case rec.Label:
		for name, role := range d.Labels {
			pod := node(name).pod
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, rec.RoleLabel, role)
			if err := x.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("label pod %s: %w", name, err)
			}
		}
		return nil
	case rec.DeletePod:
		pod := node(d.Target).pod
		return client.IgnoreNotFound(x.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
	case rec.Handover:
		return handover(ctx, node(o.Status.Primary).pod.Status.PodIP, node(d.Target).pod.Status.PodIP, primaryHost(d.Target), password)
	}
	return fmt.Errorf("unknown step %q", d.Action)
}

// handover moves the primary from the node at oldIP to the node at newIP
// (whose name is newHost) without losing a write: writes pause on the old
// primary, the new one catches up to its offset, is promoted, and the old
// primary becomes its replica; then writes resume (and are refused as
// read-only on the old primary, for clients to find the new one).
func handover(ctx context.Context, oldIP, newIP, newHost, password string) error {
	ctx, cancel := context.WithTimeout(ctx, handoverTimeout+2*redisCallTimeout)
	defer cancel()
	old := newRedisClient(oldIP, password)
	defer old.Close()
	target := newRedisClient(newIP, password)
	defer target.Close()
	pause := strconv.FormatInt(handoverTimeout.Milliseconds(), 10)
	if err := old.Do(ctx, "CLIENT", "PAUSE", pause, "WRITE").Err(); err != nil {
		return fmt.Errorf("pause writes: %w", err)
	}
	unpause := func() { _ = old.Do(context.WithoutCancel(ctx), "CLIENT", "UNPAUSE").Err() }
	deadline := time.Now().Add(handoverTimeout)
	for {
		want, err := offsetOf(ctx, old, "master_repl_offset")
		if err != nil {
			unpause()
			return err
		}
		got, err := offsetOf(ctx, target, "slave_repl_offset")
		if err != nil {
			unpause()
			return err
		}
		if got >= want {
			break
		}
		if time.Now().After(deadline) {
			unpause()
			return fmt.Errorf("the new primary did not catch up (offset %d of %d)", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := target.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		unpause()
		return fmt.Errorf("promote: %w", err)
	}
	err := old.Do(ctx, "REPLICAOF", newHost, strconv.Itoa(rec.Port)).Err()
	unpause()
	if err != nil {
		return fmt.Errorf("demote the old primary: %w", err)
	}
	return nil
}

func offsetOf(ctx context.Context, c *redis.Client, field string) (int64, error) {
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(parseInfo(text)[field], 10, 64)
}

func newRedisClient(ip, password string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         net.JoinHostPort(ip, strconv.Itoa(rec.Port)),
		Password:     password,
		Protocol:     2,
		DialTimeout:  redisDialTimeout,
		ReadTimeout:  redisCallTimeout,
		WriteTimeout: redisCallTimeout,
		MaxRetries:   -1,
		// One dial: a node that does not answer waits for the next pass.
		DialerRetries:   1,
		PoolSize:        1,
		DisableIdentity: true,
	})
}

// replicationInfo returns the fields of INFO replication of the node at ip.
func replicationInfo(ctx context.Context, ip, password string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, redisDialTimeout+redisCallTimeout)
	defer cancel()
	c := newRedisClient(ip, password)
	defer c.Close()
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	return parseInfo(text), nil
}

// redisDo sends one command to the node at ip.
func redisDo(ctx context.Context, ip, password string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, redisDialTimeout+redisCallTimeout)
	defer cancel()
	c := newRedisClient(ip, password)
	defer c.Close()
	return c.Do(ctx, args...).Err()
}

func parseInfo(text string) map[string]string {
	fields := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
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
			s.Offset = n.plan.Offset
		}
		ready := n.plan.Pod == rec.PodReady && n.plan.Answered
		if n.plan.Name == primary {
			s.Healthy = ready && n.plan.Primary
		} else {
			s.Healthy = ready && !n.plan.Primary && n.plan.Follows == primary && n.plan.LinkUp
		}
		out = append(out, s)
	}
	return out
}
