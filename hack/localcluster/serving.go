package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/cluster"
)

// demoProfile is the cluster profile the demo runs: real pods where the
// machine allows it, else kwok's fake node, saying why.
func demoProfile(flag string) (cluster.Profile, error) {
	switch flag {
	case string(cluster.RealPods), string(cluster.Full):
		return cluster.Profile(flag), nil
	case "auto":
		if err := cluster.RealPodsSupported(); err != nil {
			step("Pods cannot really run on this machine (" + err.Error() + "): the demo runs them on kwok's fake node, where no container runs")
			return cluster.Full, nil
		}
		return cluster.RealPods, nil
	}
	return "", fmt.Errorf("--profile=%s: want auto, %s or %s", flag, cluster.RealPods, cluster.Full)
}

// showServing prints what the running samples serve: the MyWeb page through
// its node port, a memcached's own statistics from a pod its Memcached
// lists in status.nodes, and a key written to and read from an EtcdCluster
// and from a RedisEnterpriseCluster.
func showServing(ctx context.Context, cl client.Client, samples []sample) {
	for _, smp := range samples {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(smp.obj.GroupVersionKind())
		if err := cl.Get(ctx, client.ObjectKey{Namespace: smp.namespace, Name: smp.obj.GetName()}, live); err != nil {
			fmt.Printf("%s %s: %v\n", smp.obj.GetKind(), smp.obj.GetName(), err)
			continue
		}
		switch smp.obj.GetKind() {
		case "MyWeb":
			port, _, _ := unstructured.NestedInt64(live.Object, "spec", "nodePortNumber")
			url := fmt.Sprintf("http://127.0.0.1:%d/", port)
			fmt.Printf("MyWeb %s, curl %s:\n", smp.obj.GetName(), url)
			fmt.Println(indent(fetch(url)))
		case "Memcached":
			nodes, _, _ := unstructured.NestedStringSlice(live.Object, "status", "nodes")
			if len(nodes) == 0 {
				fmt.Printf("Memcached %s: no pod in status.nodes\n", smp.obj.GetName())
				continue
			}
			pod := &corev1.Pod{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: smp.namespace, Name: nodes[0]}, pod); err != nil {
				fmt.Printf("Memcached %s: %v\n", smp.obj.GetName(), err)
				continue
			}
			addr := net.JoinHostPort(pod.Status.PodIP, "11211")
			fmt.Printf("Memcached %s, `stats` sent to pod %s at %s (of %d in status.nodes):\n", smp.obj.GetName(), pod.Name, addr, len(nodes))
			fmt.Println(indent(memcachedStats(addr, "version", "uptime", "curr_connections", "limit_maxbytes")))
		case "EtcdCluster":
			showEtcd(ctx, cl, live)
		case "RedisEnterpriseCluster":
			showRedis(ctx, cl, live)
		}
	}
}

// fetch returns the body GET url answers, or why there is none.
func fetch(url string) string {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Status + "\n" + string(body)
	}
	return string(body)
}

// memcachedStats returns the `stats` lines of memcached at addr that name
// one of keys.
func memcachedStats(addr string, keys ...string) string {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return err.Error()
	}
	var out []string
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		if line == "END" {
			return strings.Join(out, "\n")
		}
		if f := strings.Fields(line); len(f) == 3 && f[0] == "STAT" {
			for _, k := range keys {
				if f[1] == k {
					out = append(out, line)
				}
			}
		}
	}
	return strings.Join(append(out, fmt.Sprint("no END from memcached: ", sc.Err())), "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
