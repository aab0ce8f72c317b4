package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The EtcdCluster sample asks for etcd 3.2.13, below the first version the
// operator manages (docs/kinds.md). With real pods the demo applies the
// sample at demoEtcdVersion, a version whose image the cluster has
// (hack/nodeimages/etcd.go), and says so.
const (
	etcdSamplePath  = "config/samples/etcd/etcd_v1beta2_etcdcluster.yaml"
	demoEtcdVersion = "3.6.16"
)

// etcdSample reads the EtcdCluster sample and sets its version to
// demoEtcdVersion; it returns the version the sample asks for too.
func etcdSample(root string) (sample, string, error) {
	data, err := os.ReadFile(filepath.Join(root, etcdSamplePath))
	if err != nil {
		return sample{}, "", err
	}
	obj := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj.Object); err != nil {
		return sample{}, "", fmt.Errorf("decode %s: %w", etcdSamplePath, err)
	}
	asked, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	if err := unstructured.SetNestedField(obj.Object, demoEtcdVersion, "spec", "version"); err != nil {
		return sample{}, "", err
	}
	obj.SetNamespace(demoNamespace)
	return sample{namespace: demoNamespace, obj: obj, mustRun: true}, asked, nil
}

// showEtcd prints an EtcdCluster's members as its status lists them, and
// writes and reads back a key through the members' client port.
func showEtcd(ctx context.Context, cl client.Client, live *unstructured.Unstructured) {
	members, _, _ := unstructured.NestedSlice(live.Object, "status", "members")
	names := make([]string, 0, len(members))
	var endpoints []string
	for _, m := range members {
		member, _ := m.(map[string]any)
		name, _ := member["name"].(string)
		desc := name
		if member["leader"] == true {
			desc += " (leader)"
		}
		if member["healthy"] != true {
			desc += " (unhealthy)"
		}
		names = append(names, fmt.Sprintf("%s %v", desc, member["version"]))
		pod := &corev1.Pod{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: live.GetNamespace(), Name: name}, pod); err == nil && pod.Status.PodIP != "" {
			endpoints = append(endpoints, net.JoinHostPort(pod.Status.PodIP, "2379"))
		}
	}
	fmt.Printf("EtcdCluster %s, members from its status: %s\n", live.GetName(), strings.Join(names, ", "))
	fmt.Println(indent(etcdPutGet(ctx, endpoints)))
}

// etcdPutGet writes a key through the members at endpoints and reads it
// back (a linearizable read, answered by the quorum), or says why not.
func etcdPutGet(ctx context.Context, endpoints []string) string {
	if len(endpoints) == 0 {
		return "no member pod has an address"
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	value := "written by make demo at " + time.Now().UTC().Format(time.RFC3339)
	if _, err := c.Put(ctx, "demo", value); err != nil {
		return "put demo: " + err.Error()
	}
	got, err := c.Get(ctx, "demo")
	if err != nil {
		return "get demo: " + err.Error()
	}
	if len(got.Kvs) == 0 {
		return "get demo: no such key"
	}
	return fmt.Sprintf("put demo, then get demo through %s: %q", strings.Join(endpoints, ","), got.Kvs[0].Value)
}
