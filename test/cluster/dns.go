package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The real node's cluster DNS: CoreDNS as a process on the bridge's address,
// answering for ClusterDomain from the API server's Services and
// EndpointSlices, as a cluster's DNS add-on does. The kubelet names it as
// the pods' nameserver, so a pod resolves `<service>.<namespace>.svc` and a
// StatefulSet member's `<pod>.<service>.<namespace>.svc`. Names outside the
// cluster domain get no answer: nothing leaves the machine.
const (
	// ClusterDomain is the RealPods profile's DNS domain.
	ClusterDomain = "cluster.local"
	dnsUser       = "system:coredns"
)

// corefile is CoreDNS's configuration: the cluster domain and the reverse
// zones from the API, nothing forwarded.
func corefile(bind, kubeconfig string, readyPort int) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    ready 127.0.0.1:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
    loadbalance
}
`, bind, readyPort, ClusterDomain, kubeconfig)
}

// startDNS grants CoreDNS what a cluster's DNS add-on may read, starts it,
// and waits until it has synced with the API server.
func (c *Cluster) startDNS(ctx context.Context, token string, readyPort int) error {
	n := c.node
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: dnsUser}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", binding.Name, err)
	}

	kubeconfig := filepath.Join(n.dir, "coredns.kubeconfig")
	if err := c.writeKubeconfig(kubeconfig, dnsUser, token); err != nil {
		return err
	}
	config := filepath.Join(n.dir, "Corefile")
	if err := os.WriteFile(config, []byte(corefile(n.hostIP, kubeconfig, readyPort)), 0o644); err != nil {
		return err
	}
	if err := n.run("coredns", "-conf", config); err != nil {
		return err
	}
	ready := "http://127.0.0.1:" + strconv.Itoa(readyPort) + "/ready"
	return n.poll(ctx, time.Minute, "CoreDNS", func() error { return answersOK(ready) })
}

// DNSAddress is where the RealPods profile's pods send their DNS queries
// (UDP and TCP port 53); "" for the other profiles.
func (c *Cluster) DNSAddress() string {
	if c.node == nil {
		return ""
	}
	return c.node.hostIP
}
