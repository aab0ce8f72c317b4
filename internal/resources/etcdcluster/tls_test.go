package etcdcluster

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

func tlsSpec() *etcdv1beta2.EtcdClusterSpec {
	s := spec(3, "3.6.16")
	s.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: "peer-tls", ServerSecret: "server-tls"},
		OperatorSecret: "operator-tls",
	}}
	return s
}

func TestMembersWithTLSTalkHTTPSAndAskEveryCallerForACertificate(t *testing.T) {
	owner := testOwner()
	members := []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-1", ID: "2"}}
	c := Build(owner, tlsSpec(), FromStatus(owner.Name, members))

	var got Config
	if err := yaml.Unmarshal([]byte(c.ConfigMap.Data[ConfigKey("example-1")]), &got); err != nil {
		t.Fatal(err)
	}
	for field, url := range map[string]string{"listen-client-urls": got.ListenClientURLs, "listen-peer-urls": got.ListenPeerURLs,
		"advertise-client-urls": got.AdvertiseClientURLs, "initial-advertise-peer-urls": got.InitialAdvertisePeerURLs} {
		if !strings.HasPrefix(url, "https://") {
			t.Errorf("%s %q, want https", field, url)
		}
	}
	for _, peer := range strings.Split(got.InitialCluster, ",") {
		if _, url, _ := strings.Cut(peer, "="); !strings.HasPrefix(url, "https://") {
			t.Errorf("initial-cluster names %q, want https", peer)
		}
	}
	for side, ts := range map[string]struct {
		got *TransportSecurity
		dir string
	}{"client": {got.ClientTransportSecurity, ServerTLSDir}, "peer": {got.PeerTransportSecurity, PeerTLSDir}} {
		want := TransportSecurity{CertFile: ts.dir + "/tls.crt", KeyFile: ts.dir + "/tls.key", TrustedCAFile: ts.dir + "/ca.crt", ClientCertAuth: true,
			// A peer's address is not matched against its certificate's
			// names, which name no pod address.
			SkipClientSANVerification: side == "peer"}
		if ts.got == nil || *ts.got != want {
			t.Errorf("%s-transport-security %+v, want %+v", side, ts.got, want)
		}
	}
	if got.ListenMetricsURLs != "http://0.0.0.0:2381" {
		t.Errorf("listen-metrics-urls %q, want the plain port the probe asks", got.ListenMetricsURLs)
	}

	pod := c.StatefulSet.Spec.Template.Spec
	container := pod.Containers[0]
	if port := container.ReadinessProbe.HTTPGet.Port.String(); port != metricsPortName {
		t.Errorf("readiness probe on port %s, want %s: the client port asks the kubelet for a certificate", port, metricsPortName)
	}
	if !slices.ContainsFunc(container.Ports, func(p corev1ac.ContainerPortApplyConfiguration) bool {
		return *p.Name == metricsPortName && *p.ContainerPort == MetricsPort
	}) {
		t.Errorf("ports %v, want the metrics port %d", container.Ports, MetricsPort)
	}
	// The folder each Secret is mounted at, through its volume.
	volumeAt := map[string]string{}
	for _, m := range container.VolumeMounts {
		volumeAt[*m.MountPath] = *m.Name
	}
	secretAt := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret == nil {
			continue
		}
		var keys []string
		for _, item := range v.Secret.Items {
			keys = append(keys, *item.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"ca.crt", "tls.crt", "tls.key"}) {
			t.Errorf("volume %s mounts keys %v", *v.Name, keys)
		}
		for dir, name := range volumeAt {
			if name == *v.Name {
				secretAt[dir] = *v.Secret.SecretName
			}
		}
	}
	if want := map[string]string{ServerTLSDir: "server-tls", PeerTLSDir: "peer-tls"}; !maps.Equal(secretAt, want) {
		t.Errorf("Secrets mounted by folder %v, want %v (and not the operator's)", secretAt, want)
	}
	if c.StatefulSet.Spec.Template.Labels[TLSLabel] != "true" {
		t.Errorf("pod labels %v, want %s", c.StatefulSet.Spec.Template.Labels, TLSLabel)
	}
}

func TestMembersWithoutTLSKeepTheirStartUpFileAndProbe(t *testing.T) {
	owner := testOwner()
	members := []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}}
	// A cluster formed before each had its own token keeps its own.
	m := FromStatus(owner.Name, members)
	m.Token = LegacyClusterToken(owner.Namespace, owner.Name)
	c := Build(owner, spec(1, "3.6.16"), m)
	file := c.ConfigMap.Data[ConfigKey("example-0")]
	// The file of a cluster without TLS is what it was before TLS
	// existed, with the keys that bound its database (SpaceOf): a new key
	// changes every running cluster's ConfigMap (one apply, no restart).
	want := `advertise-client-urls: http://example-0.example.ns.svc:2379
auto-compaction-mode: periodic
auto-compaction-retention: 1h0m0s
data-dir: /var/run/etcd/data
initial-advertise-peer-urls: http://example-0.example.ns.svc:2380
initial-cluster: example-0=http://example-0.example.ns.svc:2380
initial-cluster-state: existing
initial-cluster-token: ns/example
listen-client-urls: http://0.0.0.0:2379
listen-peer-urls: http://0.0.0.0:2380
name: example-0
quota-backend-bytes: 1879048192
`
	if file != want {
		t.Errorf("start-up file:\n%s\nwant:\n%s", file, want)
	}
	pod := c.StatefulSet.Spec.Template.Spec
	if port := pod.Containers[0].ReadinessProbe.HTTPGet.Port.String(); port != clientPortName {
		t.Errorf("readiness probe on port %s, want %s", port, clientPortName)
	}
	if len(pod.Volumes) != 1 || len(pod.Containers[0].Ports) != 2 {
		t.Errorf("volumes %d, ports %d: want the config volume and the two ports alone", len(pod.Volumes), len(pod.Containers[0].Ports))
	}
}

func TestARestoredMemberWithTLSAdvertisesItsHTTPSPeerURL(t *testing.T) {
	owner := testOwner()
	s := tlsSpec()
	src := etcdv1beta2.SnapshotSource{BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
		BackupLocation: etcdv1beta2.BackupLocation{S3: &etcdv1beta2.S3BackupSource{Path: "bucket/snap", AWSSecret: "aws"}}}
	m := FromStatus(owner.Name, []etcdv1beta2.EtcdMember{{Name: "example-0"}})
	m.Restore = &Restore{Image: "tool", Source: src}
	c := Build(owner, s, m)
	init := c.StatefulSet.Spec.Template.Spec.InitContainers[0]
	if !slices.Contains(init.Args, "--initial-advertise-peer-urls=https://example-0.example.ns.svc:2380") {
		t.Errorf("restore args %v, want the https peer URL", init.Args)
	}
}
