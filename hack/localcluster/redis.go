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

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The RedisEnterpriseCluster sample asks each of its three nodes for
// 400m CPU and 4 GiB of memory, 1.2 CPUs and 12 GiB in all. With real pods
// the demo applies it with demoRedisResources, which a small machine gives
// beside the other samples, and says so; everything else is the sample's
// (its redislabs/redis image runs as the operator's open-source Redis,
// which the cluster's ImageReplaced condition says).
const redisSamplePath = "config/samples/app_v1alpha1_redisenterprisecluster.yaml"

var demoRedisResources = map[string]any{
	"limits":   map[string]any{"cpu": "300m", "memory": "256Mi"},
	"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
}

// redisSample reads the RedisEnterpriseCluster sample and gives its nodes
// demoRedisResources.
func redisSample(root string) (sample, error) {
	data, err := os.ReadFile(filepath.Join(root, redisSamplePath))
	if err != nil {
		return sample{}, err
	}
	obj := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj.Object); err != nil {
		return sample{}, fmt.Errorf("decode %s: %w", redisSamplePath, err)
	}
	if err := unstructured.SetNestedField(obj.Object, demoRedisResources, "spec", "redisEnterpriseNodeResources"); err != nil {
		return sample{}, err
	}
	obj.SetNamespace(demoNamespace)
	return sample{namespace: demoNamespace, obj: obj, mustRun: true}, nil
}

// showRedis prints a RedisEnterpriseCluster's nodes and their roles as
// its status lists them, what its ImageReplaced condition says, and
// writes a key through the primary's Service (<name>, which selects the
// primary's pod alone) and reads it back.
func showRedis(ctx context.Context, cl client.Client, live *unstructured.Unstructured) {
	nodes, _, _ := unstructured.NestedSlice(live.Object, "status", "nodes")
	roles := make([]string, 0, len(nodes))
	for _, n := range nodes {
		node, _ := n.(map[string]any)
		desc := fmt.Sprintf("%v (%v", node["name"], node["role"])
		if node["healthy"] != true {
			desc += ", unhealthy"
		}
		roles = append(roles, desc+")")
	}
	fmt.Printf("RedisEnterpriseCluster %s, nodes from its status: %s\n", live.GetName(), strings.Join(roles, ", "))
	if c := condition(live, "ImageReplaced"); c != nil {
		fmt.Printf("    ImageReplaced: %v\n", c["message"])
	}
	fmt.Println(indent(redisSetGet(ctx, cl, live.GetNamespace(), live.GetName())))
}

// redisSetGet writes a key through the primary Service of the cluster
// name, waits for a replica to hold it, and reads it back, with the
// credentials of the cluster's Secret; or says why not.
func redisSetGet(ctx context.Context, cl client.Client, namespace, name string) string {
	svc := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
		return "the primary Service: " + err.Error()
	}
	secret := &corev1.Secret{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return "the Secret: " + err.Error()
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "6379")
	rc := redis.NewClient(&redis.Options{Addr: addr, Username: string(secret.Data["username"]), Password: string(secret.Data["password"]),
		Protocol: 2, DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, DisableIdentity: true})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	value := "written by make demo at " + time.Now().UTC().Format(time.RFC3339)
	if err := rc.Set(ctx, "demo", value, 0).Err(); err != nil {
		return "SET demo: " + err.Error()
	}
	acked, err := rc.Wait(ctx, 1, 5*time.Second).Result()
	if err != nil {
		return "WAIT 1: " + err.Error()
	}
	got, err := rc.Get(ctx, "demo").Result()
	if err != nil {
		return "GET demo: " + err.Error()
	}
	return fmt.Sprintf("SET demo (WAIT 1: %d replica(s) hold it), then GET demo through Service %s (%s) as %s: %q", acked, name, addr, secret.Data["username"], got)
}
