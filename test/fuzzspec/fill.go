package fuzzspec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/podsecurity"
	redislabsv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Funcs are the fill functions of the fillers: one per type whose values
// need a shape (a string a user would write, a port, a quantity), and one
// per API struct with a field whose shape its type does not tell (a node
// port). Each fills every field it does not shape with the filler, so that
// a new field is filled too.
//
// A fill function for a type T also fills every *T, which it would never
// leave nil: each has a twin for **T (see optional) that leaves an optional
// field unset one time in eight.
func Funcs() []any {
	return []any{
		fillString, optional[string],
		fillInt32, optional[int32],
		fillInt64, optional[int64],
		fillIntOrString, optional[intstr.IntOrString],
		fillQuantity, optional[resource.Quantity],
		fillResourceList,
		fillResourceRequirements, optional[corev1.ResourceRequirements],
		fillCustomResourceRequirements,
		fillEnvVar,
		fillPodSecurityContext, optional[corev1.PodSecurityContext],
		fillSecurityContext, optional[corev1.SecurityContext],
		fillSeccompProfile, optional[corev1.SeccompProfile],
		fillCapability,
		fillProfile, fillServiceType, fillProtocol,
		fillAppServiceSpec, fillServicePort, fillMyWebSpec, fillMicroServiceDeploySpec, fillEtcdClusterSpec,
		fillMaintenancePolicy, optional[etcdv1beta2.MaintenancePolicy],
		fillRedisEnterpriseClusterSpec, fillRedisNodeResources, optional[redislabsv1alpha1.NodeResources], fillPullPolicy,
		fillLabelValue, fillToleration, fillSpread, optional[placement.Spread],
		fillEtcdOption, fillEtcdStorage, optional[etcdv1beta2.Storage],
		fillEtcdBackupSpec, fillEtcdRestoreSpec, fillSnapshotSource, optional[etcdv1beta2.SnapshotSource],
		fillS3BackupSource, optional[etcdv1beta2.S3BackupSource],
		fillPVCBackupSource, optional[etcdv1beta2.PVCBackupSource], fillBackupPolicy, optional[etcdv1beta2.BackupPolicy],
		fillRedisBackup, optional[redislabsv1alpha1.Backup], fillRedisRestoreSource, optional[redislabsv1alpha1.RestoreSource],
		fillRedisBackupStorage, fillRedisConfig,
	}
}

// optional fills the optional field *p: unset one time in eight, else a
// new T filled by T's own fill function.
func optional[T any](p **T, c randfill.Continue) {
	if c.Intn(8) == 0 {
		*p = nil
		return
	}
	*p = new(T)
	c.Fill(*p)
}

// pick returns one of choices.
func pick[T any](c randfill.Continue, choices ...T) T { return choices[c.Intn(len(choices))] }

// labelChars are the characters after a DNS label's first, letters twice
// as often as the others.
const labelChars = "abcdefghijklmnopqrstuvwxyz" + "abcdefghijklmnopqrstuvwxyz" + "0123456789-"

// label returns a DNS label of n characters at most.
func label(c randfill.Continue, n int) string {
	var b strings.Builder
	b.WriteByte(labelChars[c.Intn(26)])
	for range c.Intn(n) {
		b.WriteByte(labelChars[c.Intn(len(labelChars))])
	}
	return strings.TrimRight(b.String(), "-")
}

// fillString fills a string: mostly a DNS label (a name, an image, a
// version, a label key), which every field of a string type admits; one
// time in sixteen empty, only digits, one character longer than a DNS
// label may be, or any characters.
func fillString(s *string, c randfill.Continue) {
	switch c.Intn(64) {
	case 0:
		*s = ""
	case 1:
		*s = strconv.Itoa(c.Intn(100000))
	case 2:
		*s = strings.Repeat("a", 64)
	case 3:
		*s = c.String(0)
	default:
		*s = label(c, 20)
	}
}

// int32Edges are limits of the schema and of int32.
var int32Edges = []int32{-1, 0, 1, 80, 256, 257, 1000, 1001, 65535, 65536, math.MaxInt32, math.MinInt32}

// fillInt32 fills a count or a port: mostly a small count, sometimes zero,
// any port number or a limit.
func fillInt32(n *int32, c randfill.Continue) {
	switch c.Intn(32) {
	case 0:
		*n = pick(c, int32Edges...)
	case 1:
		*n = 1 + c.Int31n(65535)
	case 2, 3:
		*n = 0
	default:
		*n = 1 + c.Int31n(8)
	}
}

// fillInt64 fills a user or group ID, never a negative one: the schemas
// admit it, and the API server refuses it only in the pod. That gap is
// known; drawing such IDs would only report it again.
func fillInt64(n *int64, c randfill.Continue) {
	if c.Intn(4) == 0 {
		*n = pick[int64](c, 0, 1000, 65534, math.MaxInt32)
		return
	}
	*n = c.Int63n(65536)
}

// fillIntOrString fills a target port: mostly a port number, sometimes a
// limit, and sometimes a port name (the schema refuses one, the builders
// cannot open a container port for it).
func fillIntOrString(v *intstr.IntOrString, c randfill.Continue) {
	switch c.Intn(32) {
	case 0:
		*v = intstr.FromString(label(c, 15))
	case 1:
		*v = intstr.FromInt32(pick(c, int32Edges...))
	default:
		*v = intstr.FromInt32(1 + c.Int31n(65535))
	}
}

// fillQuantity fills a quantity: a count of thousandths, zero one time in
// eight, never negative (see quantityOf).
func fillQuantity(q *resource.Quantity, c randfill.Continue) {
	if c.Intn(8) == 0 {
		*q = resource.MustParse("0")
		return
	}
	*q = *resource.NewMilliQuantity(1+c.Int63n(4000), resource.DecimalSI)
}

// quantityOf returns a quantity for the resource name: CPU in
// thousandths of a core, memory and storage in MiB; zero one time in eight.
// It is never negative: the MicroServiceDeploy schema refuses a negative
// request or limit, and those of AppService and Memcached admit it though
// the API server refuses it in the pod, a known gap.
func quantityOf(name corev1.ResourceName, c randfill.Continue) resource.Quantity {
	if c.Intn(8) == 0 {
		return resource.MustParse("0")
	}
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(1+c.Int63n(4000), resource.DecimalSI)
	}
	return *resource.NewQuantity((1+c.Int63n(8192))<<20, resource.BinarySI)
}

// fillResourceList fills requests or limits: unset one time in four, else
// some of CPU, memory and ephemeral storage, the resources every spec may
// name.
func fillResourceList(l *corev1.ResourceList, c randfill.Continue) {
	if c.Intn(4) == 0 {
		*l = nil
		return
	}
	*l = corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if c.Bool() {
			(*l)[name] = quantityOf(name, c)
		}
	}
}

// withinLimits lowers, seven times in eight, each request above its limit
// to the limit: the schema refuses a request above its limit.
func withinLimits(requests, limits corev1.ResourceList, c randfill.Continue) {
	if c.Intn(8) == 0 {
		return
	}
	for name, req := range requests {
		if lim, ok := limits[name]; ok && req.Cmp(lim) > 0 {
			requests[name] = lim.DeepCopy()
		}
	}
}

// fillResourceRequirements fills a container's resources. Claims stay
// empty: a container may only claim what its pod's spec.resourceClaims
// declares, which no spec here can, so the API server refuses a pod with
// any claim; the schemas admit them, a known gap.
func fillResourceRequirements(r *corev1.ResourceRequirements, c randfill.Continue) {
	c.FillNoCustom(r)
	r.Claims = nil
	withinLimits(r.Requests, r.Limits, c)
}

func fillCustomResourceRequirements(r *customv1.ResourceRequirements, c randfill.Continue) {
	c.FillNoCustom(r)
	withinLimits(r.Requests, r.Limits, c)
}

// fillEnvVar fills an environment variable: a value, or, one time in
// four, a reference to one source the API server admits in a pod (one
// source, no value beside it, names that are names).
func fillEnvVar(e *corev1.EnvVar, c randfill.Continue) {
	c.FillNoCustom(e)
	e.ValueFrom = nil
	if c.Intn(4) != 0 {
		return
	}
	e.Value = ""
	opt := pick(c, (*bool)(nil), new(bool))
	switch c.Intn(4) {
	case 0:
		e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: label(c, 20)}, Key: label(c, 20), Optional: opt}}
	case 1:
		e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: label(c, 20)}, Key: label(c, 20), Optional: opt}}
	case 2:
		e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: pick(c, "metadata.name", "metadata.namespace", "status.podIP", "spec.nodeName")}}
	default:
		e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			Resource: pick(c, "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")}}
	}
}

// fillPodSecurityContext fills a pod's security context with the fields a
// user sets to run an image as a given user, each optional. The other
// fields (SELinux, Windows, sysctls, AppArmor, policies) stay unset: the
// schemas take any value there and the pods' own validation decides.
func fillPodSecurityContext(s *corev1.PodSecurityContext, c randfill.Continue) {
	*s = corev1.PodSecurityContext{}
	c.Fill(&s.RunAsUser)
	c.Fill(&s.RunAsGroup)
	c.Fill(&s.RunAsNonRoot)
	c.Fill(&s.FSGroup)
	c.Fill(&s.SupplementalGroups)
	c.Fill(&s.SeccompProfile)
}

// fillSecurityContext fills a container's security context likewise. It
// never sets privileged nor adds a capability: beside
// allowPrivilegeEscalation=false, the API server refuses privileged and
// CAP_SYS_ADMIN.
func fillSecurityContext(s *corev1.SecurityContext, c randfill.Continue) {
	*s = corev1.SecurityContext{}
	c.Fill(&s.RunAsUser)
	c.Fill(&s.RunAsGroup)
	c.Fill(&s.RunAsNonRoot)
	c.Fill(&s.ReadOnlyRootFilesystem)
	c.Fill(&s.AllowPrivilegeEscalation)
	c.Fill(&s.SeccompProfile)
	if c.Bool() {
		s.Capabilities = &corev1.Capabilities{}
		c.Fill(&s.Capabilities.Drop)
	}
}

func fillSeccompProfile(p *corev1.SeccompProfile, c randfill.Continue) {
	*p = corev1.SeccompProfile{Type: pick(c, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined)}
}

func fillCapability(v *corev1.Capability, c randfill.Continue) {
	*v = pick[corev1.Capability](c, "ALL", "NET_RAW", "CHOWN", "SETUID")
}

// fillProfile, fillServiceType and fillProtocol fill an enum: unset or one
// of its values, and one time in 32 any string (the schema refuses it).
func fillProfile(p *podsecurity.Profile, c randfill.Continue) {
	*p = enum(c, "", podsecurity.Baseline, podsecurity.Restricted)
}

func fillServiceType(t *corev1.ServiceType, c randfill.Continue) {
	*t = enum(c, "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer)
}

func fillProtocol(p *corev1.Protocol, c randfill.Continue) {
	*p = enum(c, "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
}

func fillPullPolicy(p *corev1.PullPolicy, c randfill.Continue) {
	*p = enum(c, "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
}

func enum[T ~string](c randfill.Continue, values ...T) T {
	if c.Intn(32) == 0 {
		var s string
		fillString(&s, c)
		return T(s)
	}
	return pick(c, values...)
}

// nodePort returns a node port: unset, or mostly one in the node port
// range of the test clusters (30000-32767), which the schema cannot know,
// or any number.
func nodePort(c randfill.Continue) int32 {
	switch c.Intn(8) {
	case 0:
		return 0
	case 1:
		var n int32
		fillInt32(&n, c)
		return n
	default:
		return 30000 + c.Int31n(2768)
	}
}

// fillAppServiceSpec follows, seven times in eight, the schema's rules
// across fields: at least one port, and no node port on a ClusterIP
// Service.
func fillAppServiceSpec(s *appv1.AppServiceSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	if c.Intn(8) == 0 {
		return
	}
	if len(s.Ports) == 0 {
		s.Ports = make([]appv1.ServicePort, 1)
		c.Fill(&s.Ports[0])
	}
	if s.ServiceType == corev1.ServiceTypeClusterIP {
		for i := range s.Ports {
			s.Ports[i].NodePort = 0
		}
	}
}

func fillServicePort(p *appv1.ServicePort, c randfill.Continue) {
	c.FillNoCustom(p)
	p.NodePort = nodePort(c)
}

func fillMyWebSpec(s *operatorv1.MyWebSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	s.NodePortNumber = nodePort(c)
}

// fillEtcdClusterSpec gives spec.version its shape: seven times in eight a
// version the schema admits (MAJOR.MINOR.PATCH), of which some are etcd's
// own, else any string.
func fillEtcdClusterSpec(s *etcdv1beta2.EtcdClusterSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	// A cluster made from a snapshot one time in four.
	if c.Intn(4) != 0 {
		s.Restore = nil
	}
	switch c.Intn(8) {
	case 0:
	case 1, 2:
		s.Version = pick(c, "3.5.21", "3.6.15", "3.6.16", "3.7.0")
	default:
		s.Version = fmt.Sprintf("%d.%d.%d", c.Intn(4), c.Intn(10), c.Intn(30))
	}
}

// fillEtcdOption fills an etcd flag: mostly --name=value of a flag the
// operator does not set, with a number, true or a word; one time in
// 64 a flag the operator sets, and one time in 64 any string (the schema
// refuses both: a spec holds several).
func fillEtcdOption(o *etcdv1beta2.EtcdOption, c randfill.Continue) {
	switch c.Intn(64) {
	case 0:
		var s string
		fillString(&s, c)
		*o = etcdv1beta2.EtcdOption(s)
	case 1:
		*o = etcdv1beta2.EtcdOption("--" + pick(c, "name", "data-dir", "listen-client-urls", "initial-cluster-token", "cert-file") + "=" + label(c, 10))
	default:
		name := pick(c, "heartbeat-interval", "election-timeout", "snapshot-count", "log-level", "max-txn-ops", "max-request-bytes", "enable-pprof")
		*o = etcdv1beta2.EtcdOption("--" + name + "=" + pick(c, strconv.Itoa(c.Intn(5000)), "true", label(c, 10)))
	}
}

// fillEtcdStorage fills a member's storage: a size of 1 to 64 GiB, zero
// one time in eight (refused), and a class name.
func fillEtcdStorage(s *etcdv1beta2.Storage, c randfill.Continue) {
	c.FillNoCustom(s)
	if s.Size != nil && !s.Size.IsZero() {
		*s.Size = *resource.NewQuantity((1+c.Int63n(64))<<30, resource.BinarySI)
	}
}

// fillMaintenancePolicy fills spec.maintenance with values the schema
// admits seven times in eight (each left out one time in four), else with
// any.
func fillMaintenancePolicy(m *etcdv1beta2.MaintenancePolicy, c randfill.Continue) {
	if c.Intn(8) == 0 {
		c.FillNoCustom(m)
		return
	}
	*m = etcdv1beta2.MaintenancePolicy{}
	if c.Intn(4) != 0 {
		m.CompactionRetention = &metav1.Duration{Duration: time.Duration(1+c.Int63n(720*60)) * time.Minute}
	}
	if c.Intn(4) != 0 {
		m.BackendQuota = resource.NewQuantity((16+c.Int63n(1792-16+1))<<20, resource.BinarySI)
	}
	if c.Intn(4) != 0 {
		d := &etcdv1beta2.DefragmentationPolicy{}
		if c.Intn(4) != 0 {
			d.MinInterval = &metav1.Duration{Duration: time.Duration(1+c.Int63n(8760*60)) * time.Minute}
		}
		if c.Intn(4) != 0 {
			d.FragmentedPercent = ptr.To(1 + c.Int31n(99))
		}
		if c.Intn(4) != 0 {
			d.MinSize = resource.NewQuantity(c.Int63n(1<<30), resource.BinarySI)
		}
		m.Defragmentation = d
	}
}

// fillRedisEnterpriseClusterSpec gives spec.nodes its shape: seven times in
// eight a count the schema admits (odd, 3 to 9), else any count.
func fillRedisEnterpriseClusterSpec(s *redislabsv1alpha1.RedisEnterpriseClusterSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	if c.Intn(8) != 0 {
		s.Nodes = pick[int32](c, 3, 5, 7, 9)
	}
	// A backup one time in two, a cluster made from a backup one time in
	// four.
	if c.Intn(2) == 0 {
		s.Backup = nil
	}
	if c.Intn(4) != 0 {
		s.Restore = nil
	}
}

// fillRedisConfig fills redis.conf parameters: mostly none, else one or
// two the API admits (live or read at start), and one time in sixteen a
// parameter the operator sets itself, which it refuses.
func fillRedisConfig(m *redislabsv1alpha1.RedisConfig, c randfill.Continue) {
	*m = nil
	if c.Intn(2) == 0 {
		return
	}
	*m = redislabsv1alpha1.RedisConfig{}
	for range 1 + c.Intn(2) {
		key := pick(c, append(slices.Clone(redislabsv1alpha1.LiveParameters), redislabsv1alpha1.RestartParameters...)...)
		if c.Intn(16) == 0 {
			key = pick(c, redislabsv1alpha1.OwnedParameters...)
		}
		(*m)[key] = redislabsv1alpha1.RedisConfigValue(pick(c, "", "1", "yes", "100mb", "allkeys-lru", label(c, 8)))
	}
}

// fillRedisBackup fills a backup with an interval, a count kept and a
// timeout the schema admits seven times in eight (each left out one time
// in four), and its storage.
func fillRedisBackup(b *redislabsv1alpha1.Backup, c randfill.Continue) {
	*b = redislabsv1alpha1.Backup{}
	if c.Intn(4) != 0 {
		b.Interval = redislabsv1alpha1.MinBackupInterval + c.Int31n(86400)
	}
	if c.Intn(4) != 0 {
		b.MaxBackups = 1 + c.Int31n(1000)
	}
	if c.Intn(4) != 0 {
		b.TimeoutSeconds = 1 + c.Int31n(86400)
	}
	if c.Intn(8) == 0 {
		b.Interval = c.Int31n(redislabsv1alpha1.MinBackupInterval)
	}
	fillRedisBackupStorage(&b.BackupStorage, c)
}

// fillRedisRestoreSource fills the backup a cluster starts from: a
// backup's or a cluster's name, and its storage.
func fillRedisRestoreSource(r *redislabsv1alpha1.RestoreSource, c randfill.Continue) {
	r.Backup = pick(c, label(c, 20), label(c, 10)+"_20261126-120000_o"+fmt.Sprint(c.Int63n(1<<40))+".rdb")
	fillRedisBackupStorage(&r.BackupStorage, c)
}

// fillRedisBackupStorage fills one of S3 and a claim seven times in
// eight, else both or neither: a bucket S3 accepts (one time in sixteen
// any name), a Secret's name, a subdir or none and an endpoint or none;
// or a claim's name and a subdir or none.
func fillRedisBackupStorage(s *redislabsv1alpha1.BackupStorage, c randfill.Continue) {
	subdir := func() string { return pick(c, "", label(c, 20), label(c, 10)+"/"+label(c, 10)) }
	s3 := &redislabsv1alpha1.S3Storage{AWSSecretName: label(c, 20), BucketName: "bk" + label(c, 20), Subdir: subdir(),
		Endpoint: pick(c, "", "http://"+label(c, 20)+":8333", "https://s3."+label(c, 10)+".example"), ForcePathStyle: c.Intn(2) == 0}
	if c.Intn(16) == 0 {
		fillString(&s3.BucketName, c)
	}
	claim := &redislabsv1alpha1.ClaimStorage{ClaimName: label(c, 20), Subdir: subdir()}
	switch c.Intn(16) {
	case 0:
		*s = redislabsv1alpha1.BackupStorage{S3: s3, PersistentVolumeClaim: claim}
	case 1:
		*s = redislabsv1alpha1.BackupStorage{}
	default:
		if c.Bool() {
			*s = redislabsv1alpha1.BackupStorage{S3: s3}
		} else {
			*s = redislabsv1alpha1.BackupStorage{PersistentVolumeClaim: claim}
		}
	}
}

// fillRedisNodeResources fills a Redis container's requests and limits:
// some of CPU, memory and ephemeral storage, each a quantity written as a
// string (sometimes with spaces in it, as the kind allows) or an integer,
// or one time in sixteen any value of its type.
func fillRedisNodeResources(r *redislabsv1alpha1.NodeResources, c randfill.Continue) {
	fill := func() map[corev1.ResourceName]redislabsv1alpha1.Quantity {
		if c.Intn(4) == 0 {
			return nil
		}
		m := map[corev1.ResourceName]redislabsv1alpha1.Quantity{}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if !c.Bool() {
				continue
			}
			q := quantityOf(name, c)
			var v redislabsv1alpha1.Quantity
			switch c.Intn(16) {
			case 0:
				c.FillNoCustom(&v)
			case 1:
				v.IntOrString = intstr.FromInt32(int32(q.Value()))
			case 2:
				v.IntOrString = intstr.FromString(strings.Replace(q.String(), "Mi", " Mi", 1))
			default:
				v.IntOrString = intstr.FromString(q.String())
			}
			m[name] = v
		}
		return m
	}
	r.Limits, r.Requests = fill(), fill()
}

// fillMicroServiceDeploySpec gives spec.creationTimestamp its shape
// (milliseconds since the Unix epoch, unset, or any string) and, seven
// times in eight, follows the schema's rules across fields: the HPA's
// maximum is at least replicas, and an autoscaling instance requests CPU.
func fillMicroServiceDeploySpec(s *customv1.MicroServiceDeploySpec, c randfill.Continue) {
	c.FillNoCustom(s)
	switch c.Intn(8) {
	case 0:
		s.CreationTimestamp = ""
	case 1:
	default:
		s.CreationTimestamp = strconv.FormatInt(c.Int63n(2_000_000_000_000), 10)
	}
	if c.Intn(8) == 0 {
		return
	}
	if s.Replicas != nil && s.AutoscalingMaxReplicas != nil && *s.AutoscalingMaxReplicas < *s.Replicas {
		*s.AutoscalingMaxReplicas = *s.Replicas
	}
	rr := &s.ResourceRequirements
	_, request := rr.Requests[corev1.ResourceCPU]
	_, limit := rr.Limits[corev1.ResourceCPU]
	if s.Autoscaling && !request && !limit {
		if rr.Requests == nil {
			rr.Requests = corev1.ResourceList{}
		}
		rr.Requests[corev1.ResourceCPU] = quantityOf(corev1.ResourceCPU, c)
	}
}

// fillLabelValue fills a node label value: mostly a DNS label, sometimes
// empty, and one time in 32 any string (the schema refuses most).
func fillLabelValue(v *placement.LabelValue, c randfill.Continue) {
	switch c.Intn(32) {
	case 0:
		var s string
		fillString(&s, c)
		*v = placement.LabelValue(s)
	case 1, 2:
		*v = ""
	default:
		*v = placement.LabelValue(label(c, 20))
	}
}

// fillToleration fills a toleration of any key, operator, value and
// effect, and, seven times in eight, follows the schema's rules across its
// fields: an empty key and a value only with the operators that admit
// them, tolerationSeconds only with the effect NoExecute.
func fillToleration(t *placement.Toleration, c randfill.Continue) {
	c.FillNoCustom(t)
	if c.Intn(4) == 0 {
		t.Key = pick(c, "", "node.kubernetes.io/unreachable", "example.com/dedicated")
	}
	t.Operator = enum(c, "", corev1.TolerationOpExists, corev1.TolerationOpEqual)
	t.Effect = enum(c, "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
	if c.Intn(8) == 0 {
		return
	}
	if t.Key == "" {
		t.Operator = corev1.TolerationOpExists
	}
	if t.Operator == corev1.TolerationOpExists {
		t.Value = ""
	}
	if t.Effect != corev1.TaintEffectNoExecute {
		t.TolerationSeconds = nil
	}
}

// fillSpread fills a spread: the default key, a well-known one or a label
// key, and one time in 32 any string (the schema refuses most).
func fillSpread(s *placement.Spread, c randfill.Continue) {
	c.FillNoCustom(s)
	switch c.Intn(32) {
	case 0:
		fillString(&s.TopologyKey, c)
	default:
		s.TopologyKey = pick(c, "", corev1.LabelHostname, corev1.LabelTopologyZone, "example.com/"+label(c, 20), label(c, 20))
	}
}

// storageTypes are the storage types of backups; a fill picks one of the
// two seven times in eight, else any string.
func storageType(c randfill.Continue) etcdv1beta2.BackupStorageType {
	if c.Intn(8) == 0 {
		var t string
		fillString(&t, c)
		return etcdv1beta2.BackupStorageType(t)
	}
	return pick(c, etcdv1beta2.BackupStorageTypeS3, etcdv1beta2.BackupStorageTypePersistentVolumeClaim)
}

// locationFor makes l the location of storage type t seven times in
// eight.
func locationFor(t etcdv1beta2.BackupStorageType, l *etcdv1beta2.BackupLocation, c randfill.Continue) {
	if c.Intn(8) == 0 {
		return
	}
	switch t {
	case etcdv1beta2.BackupStorageTypeS3:
		l.PersistentVolumeClaim = nil
		if l.S3 == nil {
			l.S3 = &etcdv1beta2.S3BackupSource{}
			fillS3BackupSource(l.S3, c)
		}
	case etcdv1beta2.BackupStorageTypePersistentVolumeClaim:
		l.S3 = nil
		if l.PersistentVolumeClaim == nil {
			l.PersistentVolumeClaim = &etcdv1beta2.PVCBackupSource{}
			fillPVCBackupSource(l.PersistentVolumeClaim, c)
		}
	}
}

// fillSnapshotSource fills a snapshot's place: a storage type and,
// mostly, its location.
func fillSnapshotSource(s *etcdv1beta2.SnapshotSource, c randfill.Continue) {
	c.FillNoCustom(&s.BackupLocation)
	s.BackupStorageType = storageType(c)
	locationFor(s.BackupStorageType, &s.BackupLocation, c)
}

// fillS3BackupSource fills a place in S3: a bucket S3 accepts and a
// prefix, a Secret's name, and an endpoint or none; one time in sixteen
// any path.
func fillS3BackupSource(s *etcdv1beta2.S3BackupSource, c randfill.Continue) {
	s.Path = "bk" + label(c, 20) + "/" + label(c, 20)
	if c.Intn(16) == 0 {
		fillString(&s.Path, c)
	}
	s.AWSSecret = label(c, 20)
	s.Endpoint = pick(c, "", "http://"+label(c, 20)+":8333", "https://s3."+label(c, 10)+".example")
	s.ForcePathStyle = c.Intn(2) == 0
}

// fillPVCBackupSource fills a place on a claim: a claim's name and a
// relative path of one or two parts.
func fillPVCBackupSource(s *etcdv1beta2.PVCBackupSource, c randfill.Continue) {
	s.ClaimName = label(c, 20)
	s.Path = pick(c, label(c, 20), label(c, 10)+"/"+label(c, 10))
}

// fillBackupPolicy fills a policy with values the schema admits seven
// times in eight, each left out (zero) one time in four.
func fillBackupPolicy(p *etcdv1beta2.BackupPolicy, c randfill.Continue) {
	*p = etcdv1beta2.BackupPolicy{}
	if c.Intn(4) != 0 {
		p.TimeoutInSecond = 1 + c.Int63n(86400)
	}
	if c.Intn(4) != 0 {
		p.BackupIntervalInSecond = 1 + c.Int63n(86400)
	}
	if c.Intn(4) != 0 {
		p.MaxBackups = 1 + c.Int31n(1000)
	}
	if c.Intn(8) == 0 {
		p.BackupIntervalInSecond = c.Int63n(3) - 1
	}
}

// fillEtcdBackupSpec fills a backup of a cluster by name or of endpoints
// (seven times in eight one of the two), kept where its storage type
// says.
func fillEtcdBackupSpec(s *etcdv1beta2.EtcdBackupSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	if s.BackupPolicy != nil {
		fillBackupPolicy(s.BackupPolicy, c)
	}
	if c.Intn(8) != 0 {
		s.ClusterName, s.EtcdEndpoints = "", nil
		if c.Intn(2) == 0 {
			s.ClusterName = label(c, 20)
		} else {
			for range 1 + c.Intn(3) {
				s.EtcdEndpoints = append(s.EtcdEndpoints, "http://"+label(c, 20)+":2379")
			}
		}
	}
	s.StorageType = storageType(c)
	c.FillNoCustom(&s.BackupLocation)
	locationFor(s.StorageType, &s.BackupLocation, c)
}

// fillEtcdRestoreSpec fills a restore: a snapshot's place, a cluster's
// name and its spec, without the restore the restore itself sets.
func fillEtcdRestoreSpec(s *etcdv1beta2.EtcdRestoreSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	fillSnapshotSource(&s.SnapshotSource, c)
	fillEtcdClusterSpec(&s.ClusterSpec, c)
	if c.Intn(16) != 0 {
		s.ClusterSpec.Restore = nil
	}
	s.EtcdCluster.Name = label(c, 20)
}
