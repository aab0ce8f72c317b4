package realpods

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/app-operator/app-operator/test/testenv"
)

// faultCell is one cell of the fault matrix: a fault against a data
// service under a client's writes, and what came of them.
type faultCell struct {
	kind, fault string
	// acked is how many writes the service acknowledged; lost how many of
	// those the final primary lacks (Redis: on how many keys the final
	// primary holds a value no history of the acknowledged ops allows).
	acked, lost int
	// unavailable is the longest time without a primary (Redis: no write
	// acknowledged) or a leader (etcd).
	unavailable time.Duration
	// toReady is how long the status took to say Ready again after the
	// fault ended.
	toReady time.Duration
}

var faultMatrix struct {
	sync.Mutex
	cells []faultCell
}

func recordCell(c faultCell) {
	faultMatrix.Lock()
	defer faultMatrix.Unlock()
	faultMatrix.cells = append(faultMatrix.cells, c)
}

// printFaultMatrix prints one line per cell, for the summary at the end of
// `make test`.
func printFaultMatrix() {
	faultMatrix.Lock()
	defer faultMatrix.Unlock()
	var b strings.Builder
	for _, c := range faultMatrix.cells {
		without := "a primary"
		if c.kind == "etcd" {
			without = "a leader"
		}
		fmt.Fprintf(&b, "fault matrix: %s, %s: %d writes acknowledged, %d lost, %.1f s without %s, Ready %.1f s after\n",
			c.kind, c.fault, c.acked, c.lost, c.unavailable.Seconds(), without, c.toReady.Seconds())
	}
	testenv.PrintSummaryLines(b.String())
}

// operatorUID is the uid the operator runs under in the cells that cut it
// alone off from a pod: no user of this machine has it.
const operatorUID = 64123

var managerBinary struct {
	once sync.Once
	dir  string
	err  error
}

// managerAsOperatorUID builds the manager binary once and writes a
// kubeconfig with the cluster's admin token, both readable by operatorUID,
// and returns their paths.
func managerAsOperatorUID(t *testing.T) (bin, kubeconfig string) {
	t.Helper()
	managerBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "app-operator-manager-")
		if err != nil {
			managerBinary.err = err
			return
		}
		managerBinary.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil {
			managerBinary.err = err
			return
		}
		_, managerBinary.err = testenv.BuildManager(dir)
	})
	if managerBinary.err != nil {
		t.Fatal(managerBinary.err)
	}
	cfg := testCluster.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	kubeconfig = filepath.Join(managerBinary.dir, fmt.Sprintf("kubeconfig-%d", time.Now().UnixNano()))
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(kubeconfig, operatorUID, operatorUID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(kubeconfig) })
	return filepath.Join(managerBinary.dir, "app-operator"), kubeconfig
}

// startOperatorAsItsUID runs the manager as a process of the operator's
// uid (so that cutOperatorFrom cuts it alone), watching namespace ns, with
// args added.
func startOperatorAsItsUID(t *testing.T, ns string, args ...string) {
	t.Helper()
	bin, kubeconfig := managerAsOperatorUID(t)
	testenv.StartManagerAs(t, operatorUID, bin, kubeconfig, filepath.Join(t.TempDir(), "manager.log"),
		append([]string{"--watch-namespaces=" + ns, "--health-probe-bind-address=0", "--metrics-bind-address=0", "--snapshot-image=" + operatorImage(t)}, args...)...)
}

// cutOperatorFrom drops every packet the operator's uid sends to ip, and
// nothing else: the clients and the kubelet still reach it. It returns the
// function that heals the cut (also called when the test ends).
func cutOperatorFrom(t *testing.T, ip string) (heal func()) {
	t.Helper()
	rule := []string{"OUTPUT", "-m", "owner", "--uid-owner", fmt.Sprint(operatorUID), "-d", ip, "-j", "DROP"}
	if out, err := exec.Command("iptables", append([]string{"-w", "-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("cut the operator off from %s: %v\n%s", ip, err, out)
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			if out, err := exec.Command("iptables", append([]string{"-w", "-D"}, rule...)...).CombinedOutput(); err != nil {
				t.Errorf("heal the cut from %s: %v\n%s", ip, err, out)
			}
		})
	}
	t.Cleanup(heal)
	return heal
}
