// Package etcdcluster builds the children of an EtcdCluster and plans its
// membership changes. Both are pure.
//
// The children: a StatefulSet of member pods (podManagementPolicy
// Parallel and updateStrategy OnDelete, so that the operator, not the
// StatefulSet controller, orders every change) whose data lives on one
// PersistentVolumeClaim per member, a headless Service through which the
// members find each other by name before they are ready, a client Service
// on port 2379, the ConfigMap of each member's start-up file, and a
// PodDisruptionBudget that keeps a quorum.
//
// The StatefulSet's replicas and the start-up files follow the membership
// the operator registered through etcd's API and recorded in
// status.members: a member's pod exists only once the member is
// registered. Only a member that has not started yet gets a file that
// lets it join the cluster; a started member's file names no peer, so a
// pod of it that comes up without its data cannot rejoin under the
// member's identity (which could elect a leader without the acknowledged
// writes). Its data on a claim, a started member restarts from its data,
// which is all it needs.
package etcdcluster

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

const (
	// RestoreContainerName is the init container that restores the first
	// member's snapshot (see Membership.Restore).
	RestoreContainerName = "restore"
	restoreTmpVolume     = "restore-tmp"
	// KindName is the value of app.kubernetes.io/name on every child and pod.
	KindName = "etcdcluster"
	// ContainerName names the etcd container.
	ContainerName = "etcd"
	// ClientPort and PeerPort are etcd's ports; with TLS, MetricsPort
	// serves /health and /metrics in plain HTTP.
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
	// DataDir is where the member's claim is mounted.
	DataDir = "/var/run/etcd"
	// DataVolume names the volume claim template: a member's claim is
	// data-<member>.
	DataVolume = "data"
	// ConfigDir is where the start-up files are mounted.
	ConfigDir = "/etc/etcd"
	// ServerTLSDir and PeerTLSDir are where, with TLS, the member's
	// server and peer Secrets are mounted.
	ServerTLSDir = "/etc/etcd-tls/server"
	PeerTLSDir   = "/etc/etcd-tls/peer"

	// TLSLabel marks the member pods of a cluster with TLS.
	TLSLabel = "app-operator/tls"

	// ClusterStateNew bootstraps the seed member; every later member joins
	// with ClusterStateExisting.
	ClusterStateNew      = "new"
	ClusterStateExisting = "existing"

	clientPortName  = "client"
	peerPortName    = "peer"
	metricsPortName = "metrics"
	serverTLSVolume = "server-tls"
	peerTLSVolume   = "peer-tls"
	// userID runs etcd as a non-root user; the image holds a static binary.
	userID       = 65532
	configVolume = "config"
)

// DataSize is the size each member's claim asks for when
// spec.storage.size is left out: the backend quota (see
// DefaultBackendQuota), a defragmentation's copy of the database, and room
// for the write-ahead log and snapshots.
var DataSize = resource.MustParse(etcdv1beta2.DefaultStorageSize)

// Children are the objects an EtcdCluster owns.
type Children struct {
	Service       *corev1ac.ServiceApplyConfiguration
	ClientService *corev1ac.ServiceApplyConfiguration
	ConfigMap     *corev1ac.ConfigMapApplyConfiguration
	StatefulSet   *appsv1ac.StatefulSetApplyConfiguration
	// PodDisruptionBudget is nil with fewer than two members: a budget
	// over one pod would block every node drain.
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// Objects returns the children in the order they are applied: the
// membership before the pods that read it.
func (c Children) Objects() []runtime.ApplyConfiguration {
	objs := []runtime.ApplyConfiguration{c.Service, c.ClientService, c.ConfigMap, c.StatefulSet}
	if c.PodDisruptionBudget != nil {
		objs = append(objs, c.PodDisruptionBudget)
	}
	return objs
}

// Build returns the desired children of the EtcdCluster owner with the
// given spec and membership (see MembershipOf).
func Build(owner resources.Owner, spec *etcdv1beta2.EtcdClusterSpec, m Membership) Children {
	selector := Selector(owner.Name)
	labels := resources.Labels(selector)
	c := Children{
		Service:       peerService(owner, selector, labels),
		ClientService: clientService(owner, selector, labels),
		ConfigMap:     configMap(owner, m.stages(spec), SpaceOf(spec), labels, m.Members, m.Kept, m.token(owner), spec.EtcdOptions),
		StatefulSet:   statefulSet(owner, spec, selector, labels, m),
	}
	if len(m.Members) > 1 {
		c.PodDisruptionBudget = podDisruptionBudget(owner, selector, labels, len(m.Members))
	}
	return c
}

// Live is what exists of an EtcdCluster's children before a pass applies
// them.
type Live struct {
	// Replicas is the live StatefulSet's replica count; nil when there is
	// no StatefulSet.
	Replicas *int32
	// Files are the live ConfigMap's start-up files, by key.
	Files map[string]string
	// Token is the initial cluster token of the live start-up files
	// (TokenOf), when the ConfigMap is this EtcdCluster's own; empty
	// otherwise.
	Token string
	// ClaimSize is the size the live StatefulSet's claim template asks
	// for (resources.TemplateClaimSize); nil when there is none.
	ClaimSize *resource.Quantity
}

// Membership is what the StatefulSet is sized from and the start-up files
// are written from.
type Membership struct {
	// Members are the members registered in etcd.
	Members []etcdv1beta2.EtcdMember
	// Replicas is the StatefulSet's replica count.
	Replicas int32
	// Kept are start-up files of the live ConfigMap kept as they are, for
	// pods the membership does not account for.
	Kept map[string]string
	// Restore, while a cluster of spec.restore has never started, is how
	// its first member restores the snapshot before it starts; nil
	// otherwise.
	Restore *Restore
	// Stages are the TLS stages of the members' start-up files (see
	// ConfigStages); nil: every member at its spec's scheme.
	Stages *Stages
	// Trust is the CAs the Secrets of spec.TLS hold, which the pods'
	// template carries as TrustAnnotation; zero without TLS, or in a
	// build without a cluster (a preview).
	Trust Trust
	// Token is the initial cluster token the start-up files and the
	// restore carry: the live files' (see Live.Token); empty gives a
	// cluster formed now its own, ClusterToken.
	Token string
	// ClaimSize is the live claim template's size (Live.ClaimSize), which
	// the StatefulSet keeps: its volumeClaimTemplates cannot change. Nil:
	// spec.storage's size.
	ClaimSize *resource.Quantity
}

// token is m.Token, or the token of a cluster owner forms now.
func (m Membership) token(owner resources.Owner) string {
	if m.Token != "" {
		return m.Token
	}
	return ClusterToken(owner)
}

// ClusterToken is the initial cluster token of a cluster formed now:
// <namespace>/<name>/<uid>. The uid gives each EtcdCluster made under a
// name its own etcd cluster ID, which backups carry to tell its history
// from that of an earlier cluster of the same name. etcd reads the token
// only when a cluster is formed, so a running cluster keeps the token it
// was formed with (LegacyClusterToken for clusters formed before).
func ClusterToken(owner resources.Owner) string {
	return owner.Namespace + "/" + owner.Name + "/" + owner.UID
}

// LegacyClusterToken is the token of the clusters formed before each had
// its own: <namespace>/<name>.
func LegacyClusterToken(namespace, name string) string { return namespace + "/" + name }

// TokenOf is the initial cluster token in start-up files, by key: that of
// the first file (by key) that carries one; empty when none does.
func TokenOf(files map[string]string) string {
	for _, key := range slices.Sorted(maps.Keys(files)) {
		var c Config
		if yaml.Unmarshal([]byte(files[key]), &c) == nil && c.InitialClusterToken != "" {
			return c.InitialClusterToken
		}
	}
	return ""
}

// stages are m.Stages, or every member at the stage of spec's scheme.
func (m Membership) stages(spec *etcdv1beta2.EtcdClusterSpec) Stages {
	if m.Stages != nil {
		return *m.Stages
	}
	return Stages{Default: StageOf(SchemeOf(spec))}
}

// Restore is how the first member of a cluster restores its snapshot: an
// init container that runs the snapshot tool of the operator's image.
type Restore struct {
	// Image is the image of the snapshot tool.
	Image string
	// Source is the snapshot.
	Source etcdv1beta2.SnapshotSource
}

// FromStatus is the membership recorded in status.members alone, for a
// build without a cluster (a preview).
func FromStatus(cluster string, members []etcdv1beta2.EtcdMember) Membership {
	return Membership{Members: members, Replicas: Replicas(cluster, members)}
}

// MembershipOf returns the membership a pass builds the children from:
// the live system's, never a status alone, which a re-created or restored
// resource has empty.
//
// When a member answered, the members are etcd's (with the claims
// recorded, see Record), and the StatefulSet has one pod per registered
// member. It shrinks only on the leader's word: a follower's list may
// trail a member just added, and a pod removed takes its claim along.
// Otherwise it keeps the size of the live StatefulSet.
//
// When no member answers, nothing is taken away: the StatefulSet keeps
// its live size (or the recorded membership's, when larger: a seed being
// started), and the live start-up files stay.
func MembershipOf(o Observed, live Live) Membership {
	members := o.Recorded
	if o.Reachable {
		members = Record(o, o.Members)
	}
	m := Membership{Members: members, Replicas: Replicas(o.Cluster, members), Token: live.Token, ClaimSize: live.ClaimSize}
	if o.Reachable && o.FromLeader {
		return m
	}
	if live.Replicas != nil && *live.Replicas > m.Replicas {
		m.Replicas = *live.Replicas
	}
	for key, file := range live.Files {
		if !slices.ContainsFunc(members, func(r etcdv1beta2.EtcdMember) bool { return ConfigKey(r.Name) == key }) {
			if m.Kept == nil {
				m.Kept = map[string]string{}
			}
			m.Kept[key] = file
		}
	}
	return m
}

// Selector is the fixed pod selector of the EtcdCluster called name.
func Selector(name string) map[string]string {
	return resources.Selector(KindName, name, nil)
}

// ClientServiceName names the Service clients reach the cluster through.
func ClientServiceName(cluster string) string { return cluster + "-client" }

// ConfigMapName names the ConfigMap of the members' start-up files.
func ConfigMapName(cluster string) string { return cluster + "-members" }

// ConfigKey is the key (and file name) of a member's start-up file.
func ConfigKey(member string) string { return member + ".yaml" }

// ClaimName is the name of the claim that holds a member's data.
func ClaimName(member string) string { return DataVolume + "-" + member }

// MemberName is the name of the member (and its pod) of the given ordinal.
func MemberName(cluster string, ordinal int) string { return cluster + "-" + strconv.Itoa(ordinal) }

// Ordinal is the ordinal of the member called member of cluster; false
// when the name is not one of its members'.
func Ordinal(cluster, member string) (int, bool) {
	rest, ok := strings.CutPrefix(member, cluster+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Scheme is the scheme of the members' client and peer URLs.
type Scheme string

const (
	HTTP  Scheme = "http"
	HTTPS Scheme = "https"
)

// SchemeOf is the scheme of the members of spec: https with spec.TLS.
func SchemeOf(spec *etcdv1beta2.EtcdClusterSpec) Scheme {
	if spec.TLSEnabled() {
		return HTTPS
	}
	return HTTP
}

// PeerURL is the peer URL of a member: its pod's name under the headless
// Service, which resolves before the pod is ready.
func PeerURL(s Scheme, cluster, namespace, member string) string {
	return fmt.Sprintf("%s://%s.%s.%s.svc:%d", s, member, cluster, namespace, PeerPort)
}

// ClientURL is the client URL member advertises: its stable name.
func ClientURL(s Scheme, cluster, namespace, member string) string {
	return fmt.Sprintf("%s://%s.%s.%s.svc:%d", s, member, cluster, namespace, ClientPort)
}

// IssuedHosts are the names of the certificates the operator issues for
// the members of cluster in namespace, when spec.TLS names no Secret: for
// the peer certificate, every member's; for the server certificate, every
// member's and the client Service's.
func IssuedHosts(cluster, namespace string) (peer, server []string) {
	members := "*." + cluster + "." + namespace + ".svc"
	return []string{members}, []string{members, ClientServerName(cluster, namespace), ClientServiceName(cluster), "localhost"}
}

// ClientServerName is the name the operator checks a member's server
// certificate against: the client Service's, which every member's
// certificate names, since clients reach the members through it.
func ClientServerName(cluster, namespace string) string {
	return ClientServiceName(cluster) + "." + namespace + ".svc"
}

// MemberOfPeerURL returns the member name a peer URL of cluster names, of
// either scheme; false when it is not one of its members' URLs.
func MemberOfPeerURL(cluster, namespace, url string) (string, bool) {
	host, ok := strings.CutPrefix(url, string(HTTP)+"://")
	if !ok {
		if host, ok = strings.CutPrefix(url, string(HTTPS)+"://"); !ok {
			return "", false
		}
	}
	name, rest, ok := strings.Cut(host, ".")
	if !ok || rest != fmt.Sprintf("%s.%s.svc:%d", cluster, namespace, PeerPort) {
		return "", false
	}
	if _, ok := Ordinal(cluster, name); !ok {
		return "", false
	}
	return name, true
}

// Replicas is the StatefulSet's replica count for the registered members:
// one past the highest ordinal, so that every registered member has its
// pod (a member being replaced leaves a gap below it, filled again when
// it is added back).
func Replicas(cluster string, members []etcdv1beta2.EtcdMember) int32 {
	n := int32(0)
	for _, m := range members {
		if o, ok := Ordinal(cluster, m.Name); ok && int32(o)+1 > n {
			n = int32(o) + 1
		}
	}
	return n
}

// InitialCluster is the initial-cluster of the registered members:
// name=peerURL of each, sorted by name, each in the scheme of its stage.
// It is what etcd checks a joining member's flags against, so it must
// list exactly the registered members at their registered URLs.
func InitialCluster(stages Stages, cluster, namespace string, members []etcdv1beta2.EtcdMember) string {
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+"="+PeerURL(stages.Of(n).peerScheme(), cluster, namespace, n))
	}
	return strings.Join(parts, ",")
}

// InitialClusterState is the initial-cluster-state of the registered
// members: new while the only registered member is the seed that etcd has
// not reported yet (it has no ID), existing afterwards.
func InitialClusterState(members []etcdv1beta2.EtcdMember) string {
	if len(members) == 1 && members[0].ID == "" {
		return ClusterStateNew
	}
	return ClusterStateExisting
}

// Config is a member's start-up file: etcd's configuration file, in
// which every setting is given (etcd reads no flag or environment
// variable beside a configuration file).
type Config struct {
	Name                     string `json:"name"`
	DataDir                  string `json:"data-dir"`
	ListenClientURLs         string `json:"listen-client-urls"`
	ListenPeerURLs           string `json:"listen-peer-urls"`
	AdvertiseClientURLs      string `json:"advertise-client-urls"`
	InitialAdvertisePeerURLs string `json:"initial-advertise-peer-urls"`
	InitialCluster           string `json:"initial-cluster"`
	InitialClusterState      string `json:"initial-cluster-state"`
	InitialClusterToken      string `json:"initial-cluster-token"`
	// With TLS: where /health and /metrics are served in plain HTTP (the
	// client port asks every caller for a certificate, the kubelet's
	// probe and a scraper included), and the certificates of each side.
	ListenMetricsURLs       string             `json:"listen-metrics-urls,omitempty"`
	ClientTransportSecurity *TransportSecurity `json:"client-transport-security,omitempty"`
	PeerTransportSecurity   *TransportSecurity `json:"peer-transport-security,omitempty"`
	// Space bounds the member's database (see SpaceOf).
	Space `json:",inline"`
}

// TransportSecurity is the TLS of one side of a member (clients or
// peers), in etcd's configuration file.
type TransportSecurity struct {
	CertFile      string `json:"cert-file"`
	KeyFile       string `json:"key-file"`
	TrustedCAFile string `json:"trusted-ca-file"`
	// ClientCertAuth refuses a caller without a certificate the trusted
	// CA signed.
	ClientCertAuth bool `json:"client-cert-auth"`
	// SkipClientSANVerification, for the peers: a peer's certificate is
	// not matched against its address. etcd would otherwise look the
	// address up in DNS and compare the names, which a pod's address does
	// not carry in the form a certificate names it; the peer CA alone
	// vouches for a member.
	SkipClientSANVerification bool `json:"skip-client-san-verification,omitempty"`
}

// transportSecurity is the TLS of the side whose Secret is mounted at dir.
func transportSecurity(dir string) *TransportSecurity {
	return &TransportSecurity{
		CertFile:       dir + "/" + tlssecret.CertKey,
		KeyFile:        dir + "/" + tlssecret.KeyKey,
		TrustedCAFile:  dir + "/" + tlssecret.CAKey,
		ClientCertAuth: true,
	}
}

// MemberConfig is the start-up file of member m among the registered
// members, at the TLS stage stages gives it, with the cluster's token. A member that has not started
// on its data (no claim recorded) joins with the registered membership; a
// started member's file names only itself, with which etcd restarts from
// the member's data but, with no data, finds no peer to join and exits.
func MemberConfig(stages Stages, cluster, namespace string, m etcdv1beta2.EtcdMember, members []etcdv1beta2.EtcdMember, token string) Config {
	initial := InitialCluster(stages, cluster, namespace, members)
	if m.ClaimUID != "" {
		initial = InitialCluster(stages, cluster, namespace, []etcdv1beta2.EtcdMember{m})
	}
	stage := stages.Of(m.Name)
	peer := stage.peerScheme()
	c := Config{
		Name:                     m.Name,
		DataDir:                  DataDir + "/data",
		ListenClientURLs:         fmt.Sprintf("%s://0.0.0.0:%d", peer, ClientPort),
		ListenPeerURLs:           fmt.Sprintf("%s://0.0.0.0:%d", peer, PeerPort),
		AdvertiseClientURLs:      ClientURL(peer, cluster, namespace, m.Name),
		InitialAdvertisePeerURLs: PeerURL(peer, cluster, namespace, m.Name),
		InitialCluster:           initial,
		InitialClusterState:      InitialClusterState(members),
		InitialClusterToken:      token,
	}
	if stage == Dual {
		// Clients on both schemes, on one port (etcd tells a TLS
		// handshake from plain HTTP on it).
		c.ListenClientURLs = fmt.Sprintf("%s://0.0.0.0:%d,%s://0.0.0.0:%d", HTTP, ClientPort, HTTPS, ClientPort)
		c.AdvertiseClientURLs = ClientURL(HTTP, cluster, namespace, m.Name) + "," + ClientURL(HTTPS, cluster, namespace, m.Name)
	}
	if stage != Plain {
		c.ListenMetricsURLs = fmt.Sprintf("http://0.0.0.0:%d", MetricsPort)
		c.ClientTransportSecurity = transportSecurity(ServerTLSDir)
		// At Dual, the peer certificate is what the member presents to
		// peers already at Secure.
		c.PeerTransportSecurity = transportSecurity(PeerTLSDir)
		c.PeerTransportSecurity.SkipClientSANVerification = true
	}
	return c
}

func configMap(owner resources.Owner, stages Stages, space Space, labels map[string]string, members []etcdv1beta2.EtcdMember, kept map[string]string, token string, options []etcdv1beta2.EtcdOption) *corev1ac.ConfigMapApplyConfiguration {
	data := make(map[string]string, len(members)+len(kept))
	maps.Copy(data, kept)
	for _, m := range members {
		c := MemberConfig(stages, owner.Name, owner.Namespace, m, members, token)
		c.Space = space
		data[ConfigKey(m.Name)] = ConfigFile(c, options)
	}
	return corev1ac.ConfigMap(ConfigMapName(owner.Name), owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithData(data)
}

func statefulSet(owner resources.Owner, spec *etcdv1beta2.EtcdClusterSpec, selector, labels map[string]string, m Membership) *appsv1ac.StatefulSetApplyConfiguration {
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(spec.Image(spec.Version)).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		// A pod of no registered member finds no file and exits.
		WithArgs("--config-file="+ConfigDir+"/$(POD_NAME).yaml").
		WithEnv(corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name")))).
		WithPorts(
			corev1ac.ContainerPort().WithName(clientPortName).WithContainerPort(ClientPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(peerPortName).WithContainerPort(PeerPort).WithProtocol(corev1.ProtocolTCP),
		).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(DataVolume).WithMountPath(DataDir),
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(ConfigDir).WithReadOnly(true),
		).
		// Ready when the member serves: a learner, or a member without a
		// leader, is not, and the client Service skips it. A NOSPACE
		// alarm leaves it ready: the cluster still serves reads and the
		// deletes and compaction that free its space, and those must
		// reach it through the Service. No liveness probe: restarting a
		// member that lost its quorum helps nothing.
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/health?exclude=NOSPACE").WithPort(intstr.FromString(healthPortName(spec)))).
			WithPeriodSeconds(5).WithTimeoutSeconds(3).WithFailureThreshold(3)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))).
		WithResources(containerResources(spec))

	if spec.TLSEnabled() {
		withTLS(container)
	}
	podSpec := corev1ac.PodSpec().
		WithContainers(container).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(userID).WithRunAsGroup(userID).WithFSGroup(userID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(corev1ac.Volume().WithName(configVolume).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(ConfigMapName(owner.Name))))
	if spec.TLSEnabled() {
		peer, server, _ := spec.TLSSecrets(owner.Name)
		podSpec.WithVolumes(resources.TLSVolume(serverTLSVolume, server), resources.TLSVolume(peerTLSVolume, peer))
	}
	if m.Restore != nil {
		init, volumes := restoreContainer(owner, SchemeOf(spec), m.Restore, m.token(owner))
		podSpec.WithInitContainers(init).WithVolumes(volumes...)
	}
	// One member per node as far as the nodes allow (spec.pod.spread):
	// a node lost takes as few members as it can.
	place := spec.Placement()
	resources.SpreadMembers(podSpec, place.Spread, selector)
	resources.Place(podSpec, place)

	if pod := spec.Pod; pod != nil && pod.PriorityClassName != "" {
		podSpec.WithPriorityClassName(pod.PriorityClassName)
	}

	template := corev1ac.PodTemplateSpec().WithLabels(podLabels(spec, labels)).WithSpec(podSpec)
	if spec.Pod != nil && len(spec.Pod.Annotations) > 0 {
		template.WithAnnotations(spec.Pod.Annotations)
	}
	if spec.TLSEnabled() && !m.Trust.IsZero() {
		// The pods the StatefulSet makes say which CAs their members
		// trust (see retrust); updateStrategy OnDelete: a change here
		// restarts no pod by itself.
		template.WithAnnotations(map[string]string{TrustAnnotation: m.Trust.String()})
	}
	replicas, whenScaled := m.Replicas, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	if spec.Hibernate {
		// Every pod stops and every claim stays: the members are still
		// etcd's members, and restart from their data when the cluster
		// wakes. The StatefulSet controller reads both fields of one
		// apply together, so no claim is deleted by the scale to 0.
		replicas, whenScaled = 0, appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	return appsv1ac.StatefulSet(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(owner.Name).
			WithPodManagementPolicy("Parallel").
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType("OnDelete")).
			// A member removed (scale-in) takes its claim along: a member
			// added later under its name starts empty, not from the data
			// of a member etcd no longer knows (but for a hibernation,
			// above). Deleting the EtcdCluster deletes the data.
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenScaled(whenScaled).
				WithWhenDeleted(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)).
			WithVolumeClaimTemplates(corev1ac.PersistentVolumeClaim(DataVolume, "").
				WithLabels(labels).
				WithSpec(claimSpec(spec, m))).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(template))
}

// claimSpec is the members' claim template: spec.storage's size and
// class, but the live template's size once the StatefulSet exists (its
// volumeClaimTemplates cannot change: a larger size grows the claims
// themselves). Without a class, the cluster's default StorageClass.
func claimSpec(spec *etcdv1beta2.EtcdClusterSpec, m Membership) *corev1ac.PersistentVolumeClaimSpecApplyConfiguration {
	size := spec.StorageSize()
	if m.ClaimSize != nil {
		size = *m.ClaimSize
	}
	c := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	if class := spec.StorageClassName(); class != "" {
		c.WithStorageClassName(class)
	}
	return c
}

// podLabels are the member pods' labels: spec.pod.labels, then the
// operator's (admission refuses spec.pod.labels of the operator's keys);
// with TLS, TLSLabel too, which tells the members' PodMonitor to scrape
// the plain metrics port rather than the client port.
func podLabels(spec *etcdv1beta2.EtcdClusterSpec, labels map[string]string) map[string]string {
	if !spec.TLSEnabled() && (spec.Pod == nil || len(spec.Pod.Labels) == 0) {
		return labels
	}
	l := map[string]string{}
	if spec.Pod != nil {
		for k, v := range spec.Pod.Labels {
			l[k] = string(v)
		}
	}
	maps.Copy(l, labels)
	if spec.TLSEnabled() {
		l[TLSLabel] = "true"
	}
	return l
}

// healthPortName is the port the readiness probe asks: with TLS, the
// plain metrics port, since the client port wants a client certificate
// the kubelet does not have.
func healthPortName(spec *etcdv1beta2.EtcdClusterSpec) string {
	if spec.TLSEnabled() {
		return metricsPortName
	}
	return clientPortName
}

// withTLS mounts the member's server and peer Secrets (resources.TLSVolume)
// into container and opens its metrics port. A Secret's files follow its
// renewals: the kubelet updates the mounted files, and etcd reads them on
// each new connection.
func withTLS(container *corev1ac.ContainerApplyConfiguration) {
	container.
		WithPorts(corev1ac.ContainerPort().WithName(metricsPortName).WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(serverTLSVolume).WithMountPath(ServerTLSDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(peerTLSVolume).WithMountPath(PeerTLSDir).WithReadOnly(true),
		)
}

// peerService is headless and publishes not-ready pods: a member resolves
// its peers' names while they start, before any of them is ready.
func peerService(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector).
			WithPorts(
				corev1ac.ServicePort().WithName(clientPortName).WithPort(ClientPort).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(clientPortName)),
				corev1ac.ServicePort().WithName(peerPortName).WithPort(PeerPort).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(peerPortName)),
			))
}

// clientService balances clients over the ready members.
func clientService(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(ClientServiceName(owner.Name), owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().WithName(clientPortName).WithPort(ClientPort).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString(clientPortName))))
}

// podDisruptionBudget lets voluntary disruptions (node drains) take a
// member only while a quorum of the others stays up.
func podDisruptionBudget(owner resources.Owner, selector, labels map[string]string, members int) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(int32(Quorum(members)))).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithUnhealthyPodEvictionPolicy(policyv1.IfHealthyBudget))
}

// Quorum is the number of voting members a cluster of n voters needs up.
func Quorum(n int) int { return n/2 + 1 }

// restoreContainer is the init container with which the first member
// restores its snapshot into its data directory, and the volumes it
// needs. The tool restores only in the first member's pod, only into an
// empty data directory: a member that restarts keeps its data, and a
// member that joins later starts empty.
func restoreContainer(owner resources.Owner, scheme Scheme, r *Restore, token string) (*corev1ac.ContainerApplyConfiguration, []*corev1ac.VolumeApplyConfiguration) {
	// The source was validated at admission; an unknown type restores
	// nothing and the tool says so.
	loc, _ := etcdbackup.LocationOf("from", r.Source.BackupStorageType, r.Source.BackupLocation)
	seed := MemberName(owner.Name, 0)
	peer := PeerURL(scheme, owner.Name, owner.Namespace, seed)
	args := append([]string{"restore",
		"--only-pod=" + seed,
		"--data-dir=" + DataDir + "/data",
		"--name=" + seed,
		"--initial-cluster=" + seed + "=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster-token=" + token,
	}, loc.Args...)
	mounts := append([]*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(DataVolume).WithMountPath(DataDir),
		corev1ac.VolumeMount().WithName(restoreTmpVolume).WithMountPath("/tmp"),
	}, loc.Mounts...)
	c := corev1ac.Container().
		WithName(RestoreContainerName).
		WithImage(r.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(etcdbackup.Tool).
		WithArgs(args...).
		WithEnv(corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name")))).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithVolumeMounts(mounts...).
		WithSecurityContext(resources.ToolSecurity())
	volumes := append([]*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(restoreTmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}, loc.Volumes...)
	return c, volumes
}
