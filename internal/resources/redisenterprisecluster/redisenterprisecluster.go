// Package redisenterprisecluster builds the children of a
// RedisEnterpriseCluster (a Secret with the credentials, a ConfigMap with
// redis.conf and each node's role, a StatefulSet of Redis servers, the
// Services and PodDisruptionBudgets) and plans, from what the operator
// sees of the Redis nodes, the one next step toward one primary and synced
// replicas (plan.go). Like every builder, it is pure.
package redisenterprisecluster

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

const (
	// KindName is the value of app.kubernetes.io/name on every child and pod.
	KindName = "redisenterprisecluster"
	// ContainerName names the Redis container.
	ContainerName = "redis"
	// PortName and Port are Redis's port, on the container and the Services.
	PortName = "redis"
	Port     = 6379
	// RoleLabel is the label the operator sets on each pod: RolePrimary
	// on the primary's, RoleReplica on the others. The `<name>` Service
	// selects the pod labelled primary.
	RoleLabel = "app-operator/redis-role"
	// UIPortName and UIPort are the web console's port, on its container
	// and the `<name>-ui` Service.
	UIPortName = "ui"
	UIPort     = 8443
	// SecretUsername and SecretPassword are the keys of the Secret.
	SecretUsername = "username"
	SecretPassword = "password"
	// ConfigFile is the key of redis.conf in the ConfigMap.
	ConfigFile = "redis.conf"
	// ConfigHashAnnotation on the pod template changes with redis.conf, so
	// that a new configuration rolls the nodes.
	ConfigHashAnnotation = "app-operator/redis-conf-sha256"
	// configDir is where the ConfigMap is mounted; dataDir is Redis's
	// working folder, on the node's volume.
	configDir = "/etc/redis"
	dataDir   = "/data"
	// userID is the redis user and group of the image.
	userID = 999
	// EnvPodName is the container's environment variable its arguments
	// use ($(VAR) expansion: the image needs no shell).
	EnvPodName = "POD_NAME"
	// EnvCLIAuth is the password redis-cli reads, for a shell in the pod.
	EnvCLIAuth = "REDISCLI_AUTH"
	// DataVolume names the volume claim template (a node's claim is
	// data-<pod>); dataVolume, configVolume, tlsVolume and authVolume
	// name the pod's volumes.
	DataVolume   = "data"
	dataVolume   = DataVolume
	configVolume = "config"
	tlsVolume    = "tls"
	authVolume   = "auth"
	// authDir is where the auth init container writes the password's
	// settings, on a volume of the pod's memory, for Redis to include.
	authDir = "/etc/redis-auth"
	// TLSDir is where, with spec.tls, its Secret is mounted.
	TLSDir = "/etc/redis-tls"
	// noPrimaryHost and noPrimaryPort are where a node that boots with no
	// primary to follow replicates from: nothing ever answers there, so
	// the node stays a replica that refuses writes (and refuses to sync
	// replicas of its own: NOMASTERLINK) until the operator promotes it.
	noPrimaryHost = "127.0.0.1"
	noPrimaryPort = 1
)

// Children are the objects a RedisEnterpriseCluster owns.
type Children struct {
	Secret         *corev1ac.SecretApplyConfiguration
	ConfigMap      *corev1ac.ConfigMapApplyConfiguration
	NodesService   *corev1ac.ServiceApplyConfiguration
	PrimaryService *corev1ac.ServiceApplyConfiguration
	UIService      *corev1ac.ServiceApplyConfiguration
	StatefulSet    *appsv1ac.StatefulSetApplyConfiguration
	// ReplicasBudget and PrimaryBudget are the PodDisruptionBudgets of the
	// replicas and of the primary.
	ReplicasBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
	PrimaryBudget  *policyv1ac.PodDisruptionBudgetApplyConfiguration
	// Console is the console's objects; nil when spec.console turns it
	// off.
	Console *ConsoleChildren
}

// Objects returns the children in the order they are applied.
func (c Children) Objects() []runtime.ApplyConfiguration {
	objects := []runtime.ApplyConfiguration{c.Secret, c.ConfigMap, c.NodesService, c.PrimaryService, c.UIService, c.StatefulSet, c.ReplicasBudget, c.PrimaryBudget}
	if c.Console != nil {
		objects = append(objects, c.Console.Objects()...)
	}
	return objects
}

// Names of the children.

// ConfigMapName is the ConfigMap holding redis.conf and the roles.
func ConfigMapName(name string) string { return name + "-config" }

// ServiceHost is the name of the primary's Service (named as the
// cluster) in namespace, which clients reach the primary through.
func ServiceHost(name, namespace string) string { return name + "." + namespace + ".svc" }

// TLSSecretName is the Secret of the nodes' certificate: spec.tls's, or
// the one the operator issues.
func TLSSecretName(name string, t *redisv1alpha1.TLS) string {
	if t.SecretName != "" {
		return t.SecretName
	}
	return name + "-tls"
}

// TLSCASecretName is the Secret of the CA the operator issues the nodes'
// certificate from, when spec.tls names no Secret.
func TLSCASecretName(name string) string { return name + "-tls-ca" }

// TLSHosts are the names the certificate the operator issues is valid
// for: the Services', short and within the namespace, and every node's.
func TLSHosts(name, namespace string) []string {
	svc := namespace + ".svc"
	return []string{ServiceHost(name, namespace), UIServiceName(name) + "." + svc, name, UIServiceName(name),
		"*." + NodesServiceName(name) + "." + svc, "*." + NodesServiceName(name)}
}

// NodesServiceName is the headless Service that names every node.
func NodesServiceName(name string) string { return name + "-nodes" }

// UIServiceName is the Service of spec.uiServiceType, which serves the
// console (see uiService).
func UIServiceName(name string) string { return name + "-ui" }

// PrimaryBudgetName is the PodDisruptionBudget of the primary's pod; the
// replicas' is named as the cluster.
func PrimaryBudgetName(name string) string { return name + "-primary" }

// PodName is the name of the node of the given ordinal.
func PodName(name string, ordinal int) string { return name + "-" + strconv.Itoa(ordinal) }

// NodeHost is the name of a node through the headless Service, as the
// other nodes of its namespace resolve it (their DNS search path completes
// it with the namespace and the cluster's domain, whatever that is).
func NodeHost(name, pod string) string {
	return pod + "." + NodesServiceName(name)
}

// RoleFile is the ConfigMap key of a node's role, included at boot.
func RoleFile(pod string) string { return pod + ".conf" }

// Selector is the fixed pod selector of the cluster called name.
func Selector(name string) map[string]string {
	return resources.Selector(KindName, name, nil)
}

// Nodes returns spec.nodes, or its default.
func Nodes(spec *redisv1alpha1.RedisEnterpriseClusterSpec) int {
	if spec.Nodes <= 0 {
		return redisv1alpha1.DefaultNodes
	}
	return int(spec.Nodes)
}

// maxNodes is the most nodes the API admits.
const maxNodes = 9

// Members returns how many pods the StatefulSet of the cluster called name
// keeps: spec.nodes, or more while the recorded primary is beyond them (a
// scale-in below its ordinal), so that its pod goes only once the operator
// has handed the primary over to a node that stays.
func Members(name string, spec *redisv1alpha1.RedisEnterpriseClusterSpec, primary string) int {
	n := Nodes(spec)
	if s, ok := strings.CutPrefix(primary, name+"-"); ok {
		if i, err := strconv.Atoi(s); err == nil && i >= n && i < maxNodes {
			return i + 1
		}
	}
	return n
}

// replicas is the StatefulSet's replica count: Members, or 0 while the
// cluster hibernates (every node stops; the claims stay, as the retention
// policy keeps them when scaled, and so do the role files, which the
// nodes read when they start again).
func replicas(name string, spec *redisv1alpha1.RedisEnterpriseClusterSpec, primary string) int {
	if spec.Hibernate {
		return 0
	}
	return Members(name, spec, primary)
}

// Input is what the builder needs beyond the spec.
type Input struct {
	// Password is the Secret's password, generated once by the operator;
	// empty without a cluster (a preview), where the Secret then holds the
	// username only.
	Password string
	// Primary is status.primary: the node the operator made the primary.
	Primary string
	// SnapshotImage is the image of the snapshot tool, which restores the
	// first node of a cluster of spec.restore.
	SnapshotImage string
	// OpenSourceImage is the operator's open-source Redis image (see
	// Image); DefaultImage when empty (a preview).
	OpenSourceImage string
	// TLSTrust is, with spec.tls, the PEM bundle of the CAs the nodes load
	// at a reload (see Trust), kept in the ConfigMap under TrustKey; empty
	// without a cluster (a preview).
	TLSTrust []byte
	// ConsoleImage is the operator's own image, which the console runs
	// (ConsoleCommand); DefaultSnapshotImage when empty (a preview).
	ConsoleImage string
	// ClaimSize is the size the live StatefulSet's claim template asks for
	// (resources.TemplateClaimSize), which the StatefulSet keeps: its
	// volumeClaimTemplates cannot change, and a larger
	// spec.persistentSpec.volumeSize grows the claims themselves. Nil:
	// the spec's size.
	ClaimSize *resource.Quantity
}

// DefaultSnapshotImage is the image of the snapshot tool when
// Input.SnapshotImage is empty (a preview): the operator's own.
const DefaultSnapshotImage = "app-operator:latest"

// Build returns the desired children of the cluster owner with the given
// spec.
func Build(owner resources.Owner, spec *redisv1alpha1.RedisEnterpriseClusterSpec, in Input) (Children, error) {
	// The API admits 3 to 9 odd nodes; a spec that got past it is refused,
	// not built (a role file per node).
	if n := Nodes(spec); n < 3 || n > maxNodes || n%2 == 0 {
		return Children{}, fmt.Errorf("spec.nodes: %d is not an odd number from 3 to 9", n)
	}
	if err := RefuseHibernation(spec); err != nil {
		return Children{}, err
	}
	res, err := Resources(spec.RedisEnterpriseNodeResources)
	if err != nil {
		return Children{}, err
	}
	selector := Selector(owner.Name)
	labels := resources.Labels(selector)
	restart, live, err := parameterLines(spec.RedisConfig)
	if err != nil {
		return Children{}, err
	}
	// The pod template's hash covers redis.conf but the parameters Redis
	// takes at run time: a change of those alone rolls no pod.
	conf := Config(res, spec.TLS != nil) + restart
	var console *ConsoleChildren
	if ConsoleEnabled(spec) {
		c, err := BuildConsole(owner, spec, cmp.Or(in.ConsoleImage, DefaultSnapshotImage))
		if err != nil {
			return Children{}, err
		}
		console = &c
	}
	return Children{
		Secret:         secret(owner, spec, in, labels),
		ConfigMap:      configMap(owner, spec, in, conf+live, labels),
		NodesService:   nodesService(owner, selector, labels),
		PrimaryService: primaryService(owner, selector, labels),
		UIService:      uiService(owner, cmp.Or(spec.UIServiceType, corev1.ServiceTypeClusterIP), labels),
		Console:        console,
		StatefulSet:    statefulSet(owner, spec, replicas(owner.Name, spec, in.Primary), res, conf, in.OpenSourceImage, cmp.Or(in.SnapshotImage, DefaultSnapshotImage), in.ClaimSize, selector, labels),
		ReplicasBudget: replicasBudget(owner, Nodes(spec), selector, labels),
		PrimaryBudget:  primaryBudget(owner, selector, labels),
	}, nil
}

// Username returns spec.username, or its default.
func Username(spec *redisv1alpha1.RedisEnterpriseClusterSpec) string {
	return cmp.Or(spec.Username, redisv1alpha1.DefaultUsername)
}

// Quantity parses a resource value as the API accepts it: a quantity in
// which spaces are ignored (`4 Gi` is 4Gi), or an integer.
func Quantity(v redisv1alpha1.Quantity) (resource.Quantity, error) {
	if v.Type == intstr.Int {
		return *resource.NewQuantity(int64(v.IntVal), resource.DecimalSI), nil
	}
	q, err := resource.ParseQuantity(strings.ReplaceAll(v.StrVal, " ", ""))
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%q is not a quantity", v.StrVal)
	}
	if q.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("%q is negative", v.StrVal)
	}
	return q, nil
}

// Resources returns the container's resources, each value normalised.
func Resources(r *redisv1alpha1.NodeResources) (corev1.ResourceRequirements, error) {
	return resourcesOf("spec.redisEnterpriseNodeResources", r)
}

// resourcesOf is Resources of r, the field path.
func resourcesOf(path string, r *redisv1alpha1.NodeResources) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	if r == nil {
		return out, nil
	}
	convert := func(field string, in map[corev1.ResourceName]redisv1alpha1.Quantity) (corev1.ResourceList, error) {
		if len(in) == 0 {
			return nil, nil
		}
		list := corev1.ResourceList{}
		for name, v := range in {
			q, err := Quantity(v)
			if err != nil {
				return nil, fmt.Errorf("%s.%s.%s: %w", path, field, name, err)
			}
			list[name] = q
		}
		return list, nil
	}
	var err error
	if out.Limits, err = convert("limits", r.Limits); err != nil {
		return out, err
	}
	if out.Requests, err = convert("requests", r.Requests); err != nil {
		return out, err
	}
	for name, req := range out.Requests {
		if lim, ok := out.Limits[name]; ok && req.Cmp(lim) > 0 {
			return out, fmt.Errorf("%s.requests.%s (%s) must not exceed %s.limits.%s (%s)",
				path, name, req.String(), path, name, lim.String())
		}
	}
	return out, nil
}

// MinReplicasMaxLag is redis.conf's min-replicas-max-lag: how long a
// primary takes writes after its last replica last acknowledged.
const MinReplicasMaxLag = 10 * time.Second

// maxmemoryShare is the share of the container's memory limit Redis may
// fill with data (maxmemory): the rest is for replication buffers, the
// fork of a background save and the allocator.
const maxmemoryShare = 0.75

// Config returns redis.conf: the settings of every node. The roles and
// the password come at boot from the role file and the arguments.
func Config(res corev1.ResourceRequirements, withTLS bool) string {
	var b strings.Builder
	b.WriteString(`# Written by app-operator: each node also includes its role file and
# gets its password from its arguments.
bind 0.0.0.0
protected-mode no
`)
	if withTLS {
		fmt.Fprintf(&b, `# TLS alone on the port (a plain connection is refused), to the
# replicas too; a client that presents a certificate must have one of the
# CA's. The operator has each node reload the files once they are renewed.
port 0
tls-port %d
tls-cert-file %s/%s
tls-key-file %s/%s
tls-ca-cert-file %s/%s
tls-replication yes
tls-auth-clients optional
`, Port, TLSDir, tlssecret.CertKey, TLSDir, tlssecret.KeyKey, TLSDir, tlssecret.CAKey)
	} else {
		fmt.Fprintf(&b, "port %d\n", Port)
	}
	b.WriteString(`dir /data
# Every write goes to the append-only file, fsynced before Redis answers:
# a primary that restarts in place reloads every write it acknowledged.
appendonly yes
appendfsync always
# The one RDB a node writes is on SIGTERM, after its last write: its
# replication ID and offset say, after the restart, how far the node got
# (reloading the append-only file restores neither). No periodic saves,
# and full syncs stream their RDB over the socket, so that no other RDB
# is mistaken for it.
save ""
shutdown-on-sigterm save
repl-diskless-sync yes
# A primary takes writes only while a replica follows it within 10 s: a
# primary left alone (cut off, or restarted empty) refuses writes rather
# than diverge from the replica the operator may promote.
min-replicas-to-write 1
min-replicas-max-lag ` + strconv.Itoa(int(MinReplicasMaxLag/time.Second)) + `
# The primary pings its replicas every second: a replica that heard
# nothing for a few seconds tells the operator its primary is gone.
repl-ping-replica-period 1
replica-serve-stale-data yes
replica-read-only yes
# The operator elects the primary; Redis never promotes itself.
replica-priority 100
`)
	if mem, ok := res.Limits[corev1.ResourceMemory]; ok && mem.Value() > 0 {
		fmt.Fprintf(&b, "maxmemory %d\nmaxmemory-policy noeviction\n", int64(float64(mem.Value())*maxmemoryShare))
	}
	return b.String()
}

func secret(owner resources.Owner, spec *redisv1alpha1.RedisEnterpriseClusterSpec, in Input, labels map[string]string) *corev1ac.SecretApplyConfiguration {
	// Data, not stringData: the API server keeps only data, and the
	// operator compares what it applies with what is stored.
	data := map[string][]byte{SecretUsername: []byte(Username(spec))}
	if in.Password != "" {
		data[SecretPassword] = []byte(in.Password)
	}
	return corev1ac.Secret(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// Roles returns each node's role file, read at boot only: `replicaof` the
// recorded primary for every other node, and for the recorded primary
// itself (and every node while none is recorded) `replicaof` an address
// where nothing answers. No node ever boots as a primary: one that
// restarts, maybe empty, refuses writes, and its replicas keep their data
// (a replica whose own link is down refuses to sync others), until the
// operator promotes the node furthest along. The rule holds while the
// operator is away.
func Roles(name string, nodes int, recorded string) map[string]string {
	roles := map[string]string{}
	none := fmt.Sprintf("# Boots following no primary, refusing writes, until the operator promotes a node.\nreplicaof %s %d\n", noPrimaryHost, noPrimaryPort)
	for i := range nodes {
		pod := PodName(name, i)
		if recorded == "" || pod == recorded {
			roles[RoleFile(pod)] = none
			continue
		}
		roles[RoleFile(pod)] = fmt.Sprintf("replicaof %s %d\n", NodeHost(name, recorded), Port)
	}
	// A recorded primary beyond the nodes wanted (being scaled away) keeps
	// its file until it is gone.
	if recorded != "" {
		roles[RoleFile(recorded)] = none
	}
	return roles
}

// FollowsNoPrimary reports whether a replica's primary host is the
// address of Roles' nodes that follow no primary.
func FollowsNoPrimary(host string) bool { return host == noPrimaryHost }

func configMap(owner resources.Owner, spec *redisv1alpha1.RedisEnterpriseClusterSpec, in Input, conf string, labels map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	data := Roles(owner.Name, Members(owner.Name, spec, in.Primary), in.Primary)
	data[ConfigFile] = conf
	if spec.Restore != nil && in.Primary != "" {
		// Restored, and promoted: a node that starts empty later syncs
		// from the primary, never from the old backup.
		data[redisbackup.RestoredKey] = "true"
	}
	if spec.TLS != nil && len(in.TLSTrust) > 0 {
		data[TrustKey(in.TLSTrust)] = string(in.TLSTrust)
	}
	return corev1ac.ConfigMap(ConfigMapName(owner.Name), owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithData(data)
}

// Args are redis-server's arguments: the configuration, the node's role
// file (its name expanded by the kubelet from the environment) and the
// password's settings the auth init container wrote (of the default user,
// of the named user, and for the link to the primary): no password on the
// command line.
func Args() []string {
	return []string{
		configDir + "/" + ConfigFile,
		"--include", configDir + "/$(" + EnvPodName + ").conf",
		"--include", authDir + "/" + redisbackup.AuthFile,
	}
}

func statefulSet(owner resources.Owner, spec *redisv1alpha1.RedisEnterpriseClusterSpec, members int, res corev1.ResourceRequirements, conf, openSource, snapshotImage string, claimSize *resource.Quantity, selector, labels map[string]string) *appsv1ac.StatefulSetApplyConfiguration {
	image, pullPolicy, _ := Image(spec, openSource)
	sum := sha256.Sum256([]byte(conf))
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(PortName))).
			WithPeriodSeconds(2).WithFailureThreshold(2)
	}
	passwordRef := corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(owner.Name).WithKey(SecretPassword))
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(image).
		WithImagePullPolicy(pullPolicy).
		// The image's entrypoint is redis-server.
		WithArgs(Args()...).
		WithEnv(
			corev1ac.EnvVar().WithName(EnvPodName).WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
			corev1ac.EnvVar().WithName(EnvCLIAuth).WithValueFrom(passwordRef),
		).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(Port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(probe()).
		WithLivenessProbe(probe().WithFailureThreshold(5).WithInitialDelaySeconds(5)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(dataVolume).WithMountPath(dataDir),
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(configDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(authVolume).WithMountPath(authDir).WithReadOnly(true),
		).
		WithVolumeMounts(tlsMounts(spec)...).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	if len(res.Limits) > 0 || len(res.Requests) > 0 {
		container.WithResources(resources.Convert[corev1ac.ResourceRequirementsApplyConfiguration](res))
	}
	podSpec := corev1ac.PodSpec().
		WithContainers(container).
		// Redis never talks to the API server.
		WithAutomountServiceAccountToken(false).
		WithTerminationGracePeriodSeconds(30).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(userID).
			WithRunAsGroup(userID).
			WithFSGroup(userID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(corev1ac.Volume().WithName(configVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(ConfigMapName(owner.Name))),
			corev1ac.Volume().WithName(authVolume).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithMedium(corev1.StorageMediumMemory).WithSizeLimit(resource.MustParse("1Mi"))))
	if spec.TLS != nil {
		podSpec.WithVolumes(resources.TLSVolume(tlsVolume, TLSSecretName(owner.Name, spec.TLS)))
	}
	if spec.Restore != nil {
		restore, volumes := redisbackup.RestoreContainer(spec.Restore, redisbackup.RestoreInput{
			Image: snapshotImage, Pod: PodName(owner.Name, 0), DataVolume: dataVolume, DataDir: dataDir, ConfigMap: ConfigMapName(owner.Name)})
		podSpec.WithInitContainers(restore).WithVolumes(volumes...)
	}
	podSpec.WithInitContainers(
		redisbackup.AuthContainer(snapshotImage, authVolume, authDir, Username(spec), passwordRef),
		redisbackup.LineageContainer(snapshotImage, dataVolume, dataDir))
	// One node per Kubernetes node as far as the nodes allow
	// (spec.spread): a node lost takes the primary or a replica, not both.
	resources.SpreadMembers(podSpec, spec.Spread, selector)
	resources.Place(podSpec, spec.Placement)
	stsSpec := appsv1ac.StatefulSetSpec().
		WithReplicas(int32(members)).
		WithServiceName(NodesServiceName(owner.Name)).
		// Every node starts at once; the operator, not the StatefulSet,
		// orders the roles.
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		// The operator replaces the pods itself, replicas first and the
		// primary last, after a handover.
		WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.OnDeleteStatefulSetStrategyType)).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(labels).
			WithAnnotations(map[string]string{ConfigHashAnnotation: hex.EncodeToString(sum[:])}).
			WithSpec(podSpec))
	if Persistent(spec) {
		size := VolumeSize(spec)
		if claimSize != nil {
			size = *claimSize
		}
		pvc := corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
		if spec.PersistentSpec.StorageClassName != "" {
			pvc.WithStorageClassName(spec.PersistentSpec.StorageClassName)
		}
		stsSpec.WithVolumeClaimTemplates(corev1ac.PersistentVolumeClaim(dataVolume, "").
			WithLabels(labels).
			WithSpec(pvc)).
			// The volumes outlive the cluster's pods, and the cluster: a
			// deleted cluster leaves its data to be deleted on purpose.
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
	} else {
		podSpec.WithVolumes(corev1ac.Volume().WithName(dataVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	return appsv1ac.StatefulSet(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(stsSpec)
}

// VolumeSize is the size each node's claim asks for:
// spec.persistentSpec.volumeSize, or DefaultVolumeSize.
func VolumeSize(spec *redisv1alpha1.RedisEnterpriseClusterSpec) resource.Quantity {
	if spec.PersistentSpec != nil && spec.PersistentSpec.VolumeSize != nil {
		return *spec.PersistentSpec.VolumeSize
	}
	return resource.MustParse(redisv1alpha1.DefaultVolumeSize)
}

// MountsTLS reports whether pod, a node's, mounts the certificate of
// spec.tls: a pod of a template with it.
func MountsTLS(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == tlsVolume && v.Secret != nil })
}

// tlsMounts mounts, with spec.tls, its Secret at TLSDir.
func tlsMounts(spec *redisv1alpha1.RedisEnterpriseClusterSpec) []*corev1ac.VolumeMountApplyConfiguration {
	if spec.TLS == nil {
		return nil
	}
	return []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName(tlsVolume).WithMountPath(TLSDir).WithReadOnly(true)}
}

// nodesService is headless and publishes nodes before they are ready: a
// replica finds its primary by name as soon as both exist.
func nodesService(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(NodesServiceName(owner.Name), owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector).
			WithPorts(redisPort()))
}

// primaryService is the `<name>` Service: it selects the pod the operator
// labelled primary.
func primaryService(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	sel := resources.Merge(selector, map[string]string{RoleLabel: redisv1alpha1.RolePrimary})
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(sel).
			WithPorts(redisPort()))
}

// uiService is the `<name>-ui` Service, of the type spec.uiServiceType
// asks for: it selects the console's pod (none while the console is off),
// never a Redis node. Forwarding the primary's Redis port there would
// publish the data set on whatever address the type gives, a public one
// for a LoadBalancer.
func uiService(owner resources.Owner, typ corev1.ServiceType, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(UIServiceName(owner.Name), owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(typ).
			WithSelector(ConsoleSelector(owner.Name)).
			WithPorts(
				corev1ac.ServicePort().WithName(UIPortName).WithPort(UIPort).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(UIPortName)),
				corev1ac.ServicePort().WithName(APIPortName).WithPort(APIPort).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(APIPortName))))
}

func redisPort() *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(PortName).WithPort(Port).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(PortName))
}

// A drain evicts the replicas one at a time, and never the primary: its
// eviction waits until the operator has handed it over to a replica in
// sync (its node cordoned) and labelled its pod a replica. Two budgets, as
// the eviction API refuses a pod that two select: the replicas' (and any
// pod not labelled yet) and the primary's. Both count pods by minAvailable,
// as a maxUnavailable would count every pod of the StatefulSet, not the
// ones selected. A pod that is not ready may always be evicted: it serves
// nothing, and a primary that is not ready fails over.

// replicasBudget keeps all replicas but one available.
func replicasBudget(owner resources.Owner, nodes int, selector, labels map[string]string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return budget(owner.Name, owner, nodes-2, metav1ac.LabelSelector().WithMatchLabels(selector).
		WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(RoleLabel).WithOperator(metav1.LabelSelectorOpNotIn).WithValues(redisv1alpha1.RolePrimary)), labels)
}

// primaryBudget keeps the primary's pod.
func primaryBudget(owner resources.Owner, selector, labels map[string]string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return budget(PrimaryBudgetName(owner.Name), owner, 1,
		metav1ac.LabelSelector().WithMatchLabels(resources.Merge(selector, map[string]string{RoleLabel: redisv1alpha1.RolePrimary})), labels)
}

func budget(name string, owner resources.Owner, minAvailable int, selector *metav1ac.LabelSelectorApplyConfiguration, labels map[string]string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt(minAvailable)).
			WithSelector(selector).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}
