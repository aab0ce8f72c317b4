package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// OLM v1 on the local cluster: catalogd and operator-controller, built from
// source by `make olm` (hack/olm), run beside the control plane as its other
// components are, with the cluster's admin credentials. catalogd serves the
// catalogs' content over TLS with a certificate made here (in a cluster,
// cert-manager makes it); operator-controller trusts that certificate's CA.
// Both pull images (catalogs, bundles) from the RealPods profile's registry,
// which answers plain HTTP: a registries.conf makes it docker.io's mirror,
// as containerd's configuration does for pods, and marks it insecure.

// OLMBinDirEnv overrides the folder OLM's binaries are read from.
const OLMBinDirEnv = "APP_OPERATOR_OLM"

// OLMSystemNamespace is the namespace OLM keeps its state in (Helm release
// Secrets, the pull secret it may use).
const OLMSystemNamespace = "olmv1-system"

// DefaultOLMBinDir is the folder `make olm` builds into:
// bin/olm/operator-controller-<version>, with the version read from
// hack/olm/go.mod.
func DefaultOLMBinDir() (string, error) {
	return pinnedBinDir(OLMBinDirEnv, "olm", pin{"operator-controller", "hack/olm/go.mod", "github.com/operator-framework/operator-controller"})
}

// RegistryAddr is the address (host:port) of the RealPods profile's image
// registry, empty for the other profiles.
func (c *Cluster) RegistryAddr() string {
	if c.node == nil {
		return ""
	}
	return c.node.registry
}

// StartOLM installs OLM v1's CRDs and runs catalogd and operator-controller
// from binDir (empty: DefaultOLMBinDir) until the cluster stops. It returns
// once both answer their health checks.
func (c *Cluster) StartOLM(ctx context.Context, binDir string) error {
	if c.RegistryAddr() == "" {
		return errors.New("OLM pulls from the cluster's registry: only the RealPods profile has one")
	}
	if binDir == "" {
		var err error
		if binDir, err = DefaultOLMBinDir(); err != nil {
			return err
		}
	}
	for _, f := range []string{"catalogd", "operator-controller", "crds"} {
		if _, err := os.Stat(filepath.Join(binDir, f)); err != nil {
			return fmt.Errorf("OLM not built (run `make olm`): %w", err)
		}
	}
	if err := c.InstallCRDs(ctx, filepath.Join(binDir, "crds")); err != nil {
		return fmt.Errorf("install OLM's CRDs: %w", err)
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OLMSystemNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	dir := filepath.Join(c.Dir, "olm")
	for _, d := range []string{"catalogd-cache", "operator-controller-cache", "cas"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := writeCatalogdTLS(dir); err != nil {
		return err
	}
	// As containerd's mirror does for pods: an image of docker.io (such as
	// docker.io/library/app-operator-bundle:v0.1.0) comes from the
	// cluster's registry. containers/image reads registries.conf from
	// $HOME/.config/containers, HOME being a folder of the run's.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config", "containers"), 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf("[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n\n"+
		"[[registry]]\nlocation = %q\ninsecure = true\n", c.RegistryAddr(), c.RegistryAddr())
	if err := os.WriteFile(filepath.Join(home, ".config", "containers", "registries.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	catalogs, catalogdProbe, webhook, controllerProbe, catalogdMetrics := ports[0], ports[1], ports[2], ports[3], ports[4]
	env := append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "HOME="+home)
	catalogdAddr := "127.0.0.1:" + strconv.Itoa(catalogs)
	p, err := startProcessEnv(filepath.Join(binDir, "catalogd"), []string{
		"--system-namespace=" + OLMSystemNamespace,
		"--catalogs-server-addr=" + catalogdAddr,
		"--external-address=" + catalogdAddr,
		"--tls-cert=" + filepath.Join(dir, "catalogd.crt"),
		"--tls-key=" + filepath.Join(dir, "catalogd.key"),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(catalogdMetrics),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(catalogdProbe),
		"--webhook-server-port=" + strconv.Itoa(webhook),
		"--cache-dir=" + filepath.Join(dir, "catalogd-cache"),
	}, filepath.Join(c.Dir, "logs", "catalogd.log"), env)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	p, err = startProcessEnv(filepath.Join(binDir, "operator-controller"), []string{
		"--system-namespace=" + OLMSystemNamespace,
		"--catalogd-cas-dir=" + filepath.Join(dir, "cas"),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(controllerProbe),
		"--cache-path=" + filepath.Join(dir, "operator-controller-cache"),
	}, filepath.Join(c.Dir, "logs", "operator-controller.log"), env)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	for name, port := range map[string]int{"catalogd": catalogdProbe, "operator-controller": controllerProbe} {
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
		var last error
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			last = answersOK(url)
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("%s not ready at %s: %v; its log ends:\n%s", name, url, last, c.procs[len(c.procs)-1].tail(20))
		}
	}
	return nil
}

// writeCatalogdTLS writes a CA (cas/ca.crt, which operator-controller
// trusts) and catalogd's serving certificate for 127.0.0.1 signed by it
// (catalogd.crt, catalogd.key) into dir.
func writeCatalogdTLS(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "olm-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "catalogd"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for path, block := range map[string]*pem.Block{
		filepath.Join(dir, "cas", "ca.crt"): {Type: "CERTIFICATE", Bytes: caDER},
		filepath.Join(dir, "catalogd.crt"):  {Type: "CERTIFICATE", Bytes: leafDER},
		filepath.Join(dir, "catalogd.key"):  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	// The pair must load as catalogd will load it.
	_, err = tls.LoadX509KeyPair(filepath.Join(dir, "catalogd.crt"), filepath.Join(dir, "catalogd.key"))
	return err
}
