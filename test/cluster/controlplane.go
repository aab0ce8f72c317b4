package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The control plane's components: their binaries, ports, tokens and
// kubeconfigs, how each is run, and the wait for the API server.

func (c *Cluster) run(name string, args ...string) error {
	p, err := startProcess(filepath.Join(c.binDir, name), args, filepath.Join(c.Dir, "logs", name+".log"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, p)
	return nil
}

// waitReady polls /readyz until the apiserver answers ok, failing fast if a
// component exits.
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		last = err
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (last answer: %v)", err, last)
	}
	return nil
}

func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v; last log lines:\n%s", p.name, p.err, p.tail(20))
		default:
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig(path, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

func checkBinaries(binDir string, profile Profile) error {
	names := []string{"etcd", "kube-apiserver", "kubectl"}
	switch profile {
	case Full:
		names = append(names, "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml")
	case RealPods:
		names = append(names, "kube-controller-manager", "kube-scheduler")
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(binDir, n)); err != nil {
			return fmt.Errorf("control-plane binary %s missing in %s: run `make controlplane` first", n, binDir)
		}
	}
	return nil
}

// freePorts reserves n distinct free loopback ports. They are released before
// the components bind them; collisions with other processes are unlikely.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
