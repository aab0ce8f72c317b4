package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/cluster"
)

// The cluster a run measures on: a fresh local cluster with the operator's
// identity, and the helpers every scenario uses on it.

// env is one fresh cluster with the operator's identity in place.
type env struct {
	cfg        Config
	cluster    *cluster.Cluster
	admin      client.Client
	adminCfg   *rest.Config
	kubeconfig string        // the operator's ServiceAccount
	operator   client.Client // with kubeconfig, made on first use
	audit      *auditLog
}

func newEnv(ctx context.Context, cfg Config) (*env, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(cfg.Progress, "Starting a fresh local cluster")
	cl, err := cluster.Start(ctx, cluster.Options{
		Profile:     cluster.Full,
		CRDDir:      filepath.Join(root, "config", "crd", "bases"),
		AuditPolicy: auditPolicy,
		// kube-controller-manager's own client allows 20 requests a second
		// by default: a thousand new Deployments then take minutes to be
		// reported available, which would measure it rather than the
		// operator. Lifted here, so that Ready times reflect the operator.
		ControllerManagerArgs: []string{"--kube-api-qps=1000", "--kube-api-burst=2000"},
	})
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, cluster: cl, adminCfg: cl.Config(), audit: &auditLog{path: cl.AuditLogPath()}}
	e.adminCfg.QPS, e.adminCfg.Burst = -1, 0
	if e.admin, err = client.New(e.adminCfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
		e.close()
		return nil, err
	}
	if err := e.installIdentity(ctx, root); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.cluster.Stop() == nil {
		_ = e.cluster.RemoveDir()
	}
}

// done ends a run with the env: on success it removes the cluster, on error
// *err it stops the cluster but keeps its directory, and names the directory
// in *err.
func (e *env) done(err *error) {
	if *err == nil {
		e.close()
	} else {
		_ = e.cluster.Stop()
		*err = fmt.Errorf("%w (cluster logs in %s)", *err, e.cluster.Dir)
	}
}

// installIdentity creates the operator's ServiceAccount, binds it to the
// generated ClusterRole and writes a kubeconfig holding only its token.
func (e *env) installIdentity(ctx context.Context, root string) error {
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorServiceAccount}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "app-operator-bench"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: operatorServiceAccount}},
		},
	}
	for _, o := range objs {
		if err := e.admin.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	sa, err := e.cluster.ServiceAccountConfig(ctx, operatorNamespace, operatorServiceAccount)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: sa.Host, CertificateAuthorityData: sa.CAData}
	kc.AuthInfos["app-operator"] = &clientcmdapi.AuthInfo{Token: sa.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "app-operator"}
	kc.CurrentContext = "local"
	e.kubeconfig = filepath.Join(e.cluster.Dir, "app-operator.kubeconfig")
	return clientcmd.WriteToFile(*kc, e.kubeconfig)
}

// namespaces creates the namespaces prefix000.. for n applications.
func (e *env) namespaces(ctx context.Context, prefix string, from, n int) ([]string, error) {
	var names []string
	for i := range (n + e.cfg.PerNamespace - 1) / e.cfg.PerNamespace {
		name := fmt.Sprintf("%s%03d", prefix, i)
		names = append(names, name)
		if i*e.cfg.PerNamespace+e.cfg.PerNamespace <= from {
			continue // exists already
		}
		err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	return names, nil
}

// create creates applications from..to-1 of w, spread over namespaces of
// prefix, with 16 concurrent requests.
func (e *env) create(ctx context.Context, w workload, prefix string, from, to int) error {
	if _, err := e.namespaces(ctx, prefix, from, to); err != nil {
		return err
	}
	return parallel(16, from, to, func(i int) error {
		ns := fmt.Sprintf("%s%03d", prefix, i/e.cfg.PerNamespace)
		return e.admin.Create(ctx, w.newObject(ns, fmt.Sprintf("app-%05d", i), i))
	})
}

// parallel runs f(i) for i in [from, to) on workers goroutines.
func parallel(workers, from, to int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (e *env) poll(ctx context.Context, what string, cond func() (bool, string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.cfg.Timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (%s)", what, err, last)
	}
	return nil
}

// quiet waits until the operator has made no mutating request for 3 s.
func (e *env) quiet(ctx context.Context, op *operator) (float64, error) {
	last, since := -1.0, time.Now()
	err := e.poll(ctx, "the operator settles", func() (bool, string) {
		s, err := op.scrape()
		if err != nil {
			return false, err.Error()
		}
		if s.writes != last {
			last, since = s.writes, time.Now()
		}
		return time.Since(since) >= 3*time.Second, fmt.Sprintf("%v writes so far", last)
	})
	return last, err
}

// operatorClient returns a client with the operator's identity.
func (e *env) operatorClient() (client.Client, error) {
	if e.operator == nil {
		cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg.QPS, cfg.Burst = -1, 0
		if e.operator, err = client.New(cfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
			return nil, err
		}
	}
	return e.operator, nil
}

// httpGet reads url with hc and hands the body of a 200 answer to read.
func httpGet(ctx context.Context, hc *http.Client, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(resp.Body)
}

func (e *env) startOperator(workers int) (*operator, error) {
	return startOperator(e.cfg.Operator, e.kubeconfig, filepath.Join(e.cluster.Dir, "logs", "app-operator.log"), workers, e.cfg.OperatorEnv, e.cfg.Cgroup)
}
