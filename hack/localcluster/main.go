// Command localcluster starts the local control plane for people.
//
//	localcluster up [--profile=full|api-only|real-pods]
//	    start a cluster, print how to reach it, stop it on Ctrl-C
//	localcluster demo --operator=bin/app-operator [--exit-when-ready] [--profile=auto|real-pods|full]
//	    start a cluster whose pods really run where the machine allows it
//	    (else the full kwok one, saying why), install the CRDs, run the
//	    operator, apply every sample in config/samples into one namespace
//	    through its kustomization (as a user does), wait until each is Ready
//	    or says why not, and show the result, what the running samples
//	    serve, and how to look at each sample
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/cluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "demo":
		err = demo(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil && ctx.Err() != nil {
		// Ctrl-C is how the demo and the cluster are meant to end, at any
		// step: everything started has been stopped by the time up or demo
		// returns, so the error is only the interrupted step's.
		fmt.Println("Interrupted; everything is stopped")
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localcluster up [--profile=full|api-only|real-pods] [--nodes=N] | demo --operator=PATH [--exit-when-ready] [--profile=auto|real-pods|full] [--nodes=N]")
	os.Exit(2)
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	profile := fs.String("profile", string(cluster.Full), "full, api-only or real-pods")
	nodes := fs.Int("nodes", 1, "how many real nodes (real-pods profile)")
	_ = fs.Parse(args)

	c, err := cluster.Start(ctx, cluster.Options{Profile: cluster.Profile(*profile), Progress: os.Stdout, Nodes: *nodes})
	if err != nil {
		return err
	}
	defer stopCluster(c)
	printAccess(c)
	<-ctx.Done()
	return nil
}

// demo starts a cluster and the operator on it, applies every sample and
// waits until each is Ready or reports why not, shows them, and says how to
// look at each; unless told to exit then, it runs until interrupted.
func demo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	operator := fs.String("operator", "bin/app-operator", "path of the manager binary")
	exitWhenReady := fs.Bool("exit-when-ready", false, "stop everything once every sample is Ready instead of waiting for Ctrl-C")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the samples to become Ready")
	profileFlag := fs.String("profile", "auto", "real-pods, full (kwok's fake node), or auto: real-pods where the machine allows it")
	nodes := fs.Int("nodes", 1, "how many real nodes (real-pods profile): each one beyond the first runs in a network namespace of its own")
	_ = fs.Parse(args)
	profile, err := demoProfile(*profileFlag)
	if err != nil {
		return err
	}
	if *nodes > 1 && profile != cluster.RealPods {
		return fmt.Errorf("--nodes=%d needs the real-pods profile, not %s", *nodes, profile)
	}

	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	c, err := cluster.Start(ctx, cluster.Options{Profile: profile, Progress: os.Stdout, Nodes: *nodes})
	if err != nil {
		return err
	}
	defer stopCluster(c)
	kubectl := func(args ...string) error {
		cmd := kubectlCommand(ctx, c, root, args...)
		cmd.Stdout = os.Stdout
		return cmd.Run()
	}

	if err := installCRDs(root, kubectl); err != nil {
		return err
	}

	// The Redis nodes' init containers and the backups' Jobs run the
	// operator's tools from its image: on real pods, it must be there.
	var opArgs []string
	if profile == cluster.RealPods {
		step("Building the operator's image, whose tools the pods run")
		if err := pushOperatorImage(ctx, c, root); err != nil {
			return err
		}
		opArgs = append(opArgs, "--snapshot-image="+demoOperatorImage)
	}
	step("Starting the operator (log: " + filepath.Join(c.Dir, "logs", "app-operator.log") + ")")
	op, err := startOperator(ctx, *operator, c, opArgs...)
	if err != nil {
		return err
	}
	defer op.stop()

	cl, samples, err := applySamples(ctx, c, root, profile, kubectl)
	if err != nil {
		return err
	}

	step("Waiting until every sample is Ready or reports why not")
	settled := waitSettled(ctx, c, samples, *timeout)

	step("The samples and their children")
	showSamples(samples, kubectl)
	if len(c.NodeNames()) > 1 {
		step("Where each pod runs")
		_ = kubectl("get", "pods", "-n", demoNamespace, "-o", "custom-columns=POD:.metadata.name,NODE:.spec.nodeName,STATUS:.status.phase", "--sort-by=.spec.nodeName")
	}
	fmt.Println()
	for _, line := range settled.lines {
		fmt.Println(line)
	}
	if !settled.ok {
		return fmt.Errorf("samples not settled within %s (operator log: %s)", timeout, filepath.Join(c.Dir, "logs", "app-operator.log"))
	}
	if profile == cluster.RealPods {
		step("What the running samples serve")
		showServing(ctx, cl, samples)
	}
	if *exitWhenReady {
		return nil
	}
	printAccess(c)
	printLook(profile, samples)
	<-ctx.Done()
	return nil
}

// installCRDs installs the CRDs of config/crd, when the repository has
// them, and waits until they are established.
func installCRDs(root string, kubectl func(args ...string) error) error {
	if _, err := os.Stat(filepath.Join(root, "config", "crd", "kustomization.yaml")); err == nil {
		step("Installing the CRDs")
		if err := kubectl("apply", "--server-side", "-k", "config/crd"); err != nil {
			return err
		}
		if err := kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
			return err
		}
	}
	return nil
}

// applySamples applies every sample of config/samples into the demo's
// namespace, and the EtcdCluster and RedisEnterpriseCluster samples with
// the RealPods profile. It
// returns a client of the cluster and the samples applied.
func applySamples(ctx context.Context, c *cluster.Cluster, root string, profile cluster.Profile, kubectl func(args ...string) error) (client.Client, []sample, error) {
	step("Applying every sample: kubectl apply -n " + demoNamespace + " -k config/samples")
	// The kustomization applies the sample files unchanged but for what
	// lets them share one namespace and one cluster (see its comments).
	rendered, err := kubectlCommand(ctx, c, root, "kustomize", "config/samples").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("kubectl kustomize config/samples: %w", err)
	}
	samples, err := decodeSamples(rendered, demoNamespace)
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(c.Config(), client.Options{})
	if err != nil {
		return nil, nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("create namespace %s: %w", demoNamespace, err)
	}
	if err := kubectl("apply", "-n", demoNamespace, "-k", "config/samples"); err != nil {
		return nil, nil, err
	}
	if profile == cluster.RealPods {
		etcd, asked, err := etcdSample(root)
		if err != nil {
			return nil, nil, err
		}
		step(fmt.Sprintf("Applying the EtcdCluster sample (%s) at etcd %s: the sample's %s is below 3.4, the first version the operator manages", etcdSamplePath, demoEtcdVersion, asked))
		if err := cl.Create(ctx, etcd.obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("create the EtcdCluster sample: %w", err)
		}
		samples = append(samples, etcd)
		rec, err := redisSample(root)
		if err != nil {
			return nil, nil, err
		}
		step(fmt.Sprintf("Applying the RedisEnterpriseCluster sample (%s) with each node's CPU and memory at requests %s, %s and limits %s, %s: "+
			"the sample's three nodes ask for 1.2 CPUs and 12 GiB, more than this machine gives beside the other samples. "+
			"Its image, redislabs/redis, is Redis Enterprise's: the operator runs open-source Redis in its place and says so",
			redisSamplePath, demoRedisResources["requests"].(map[string]any)["cpu"], demoRedisResources["requests"].(map[string]any)["memory"],
			demoRedisResources["limits"].(map[string]any)["cpu"], demoRedisResources["limits"].(map[string]any)["memory"]))
		if err := cl.Create(ctx, rec.obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("create the RedisEnterpriseCluster sample: %w", err)
		}
		samples = append(samples, rec)
	} else {
		step("The EtcdCluster sample (" + etcdSamplePath + ") is not applied: kwok's fake node runs no etcd")
		step("The RedisEnterpriseCluster sample (" + redisSamplePath + ") is not applied: kwok's fake node runs no Redis")
	}
	return cl, samples, nil
}

// showSamples lists the samples and the children the operator made for
// them.
func showSamples(samples []sample, kubectl func(args ...string) error) {
	kinds := map[string]bool{}
	var kindList []string
	for _, smp := range samples {
		if !kinds[smp.obj.GetKind()] {
			kinds[smp.obj.GetKind()] = true
			kindList = append(kindList, strings.ToLower(smp.obj.GetKind()))
		}
	}
	_ = kubectl("get", strings.Join(kindList, ","), "-n", demoNamespace)
	_ = kubectl("get", "deployments,statefulsets,services,configmaps,serviceaccounts,horizontalpodautoscalers,ingresses,poddisruptionbudgets,resourcequotas,pods", "-n", demoNamespace, "-l", "app.kubernetes.io/managed-by=app-operator")
}

// printLook prints how to look at each sample.
func printLook(profile cluster.Profile, samples []sample) {
	if profile == cluster.RealPods {
		fmt.Println("Look at each sample (its pods' output: kubectl -n " + demoNamespace + " logs <pod>):")
	} else {
		fmt.Println("Look at each sample (kwok runs the pods on a fake node without containers, so no port answers):")
	}
	fmt.Println()
	for _, smp := range samples {
		fmt.Printf("  %-20s %s\n", smp.obj.GetKind(), lookCommand(smp))
	}
	fmt.Println()
}

// demoNamespace holds every sample the demo applies.
const demoNamespace = "demo"

// kubectlCommand is the cluster's kubectl, run in dir, with its error
// output on the demo's.
func kubectlCommand(ctx context.Context, c *cluster.Cluster, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir(), "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	return cmd
}

// sample is one object of config/samples, as its kustomization renders it.
type sample struct {
	namespace string
	obj       *unstructured.Unstructured
	// mustRun: only Ready settles the sample. A failure it reports
	// meanwhile (a member pod unschedulable until its claim is bound) is
	// waited out.
	mustRun bool
}

// decodeSamples reads the objects of `kubectl kustomize config/samples`,
// each to be applied into namespace ns.
func decodeSamples(rendered []byte, ns string) ([]sample, error) {
	var out []sample
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode the samples: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		out = append(out, sample{namespace: ns, obj: obj})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("config/samples renders no object")
	}
	return out, nil
}

// lookCommand is the kubectl command that shows what the operator made of
// a sample.
func lookCommand(smp sample) string {
	name := smp.obj.GetName()
	prefix := "kubectl -n " + smp.namespace + " "
	switch smp.obj.GetKind() {
	case "AppService", "WebService":
		port, _, _ := unstructured.NestedSlice(smp.obj.Object, "spec", "ports")
		cmd := prefix + "get deployment,service " + name
		if len(port) > 0 {
			if p, ok := port[0].(map[string]any); ok && p["nodePort"] != nil {
				cmd += fmt.Sprintf("   # node port %v under PORT(S)", p["nodePort"])
			}
		}
		return cmd
	case "MicroServiceDeploy":
		return prefix + "get deployment,service,configmap,serviceaccount,hpa -l app.kubernetes.io/instance=" + name
	case "Memcached":
		return prefix + "get memcached " + name + " -o jsonpath='{.status.nodes}'   # its pods"
	case "MyWeb":
		return prefix + "get configmap " + name + ` -o jsonpath='{.data.index\.html}'   # the page nginx serves`
	case "EtcdCluster":
		return prefix + "get etcdcluster " + name + " -o jsonpath='{.status.members}'   # its members, as etcd reports them"
	case "RedisEnterpriseCluster":
		return prefix + "get rec " + name + " -o jsonpath='{.status.nodes}'   # its nodes and their roles"
	}
	return prefix + "describe " + strings.ToLower(smp.obj.GetKind()) + " " + name
}

type settledResult struct {
	ok    bool
	lines []string
}

// waitSettled polls the samples until each one is Ready, or Degraded with a
// reason (a sample the cluster cannot satisfy says so and stays that way).
func waitSettled(ctx context.Context, c *cluster.Cluster, samples []sample, timeout time.Duration) settledResult {
	cl, err := client.New(c.Config(), client.Options{})
	if err != nil {
		return settledResult{lines: []string{err.Error()}}
	}
	deadline := time.Now().Add(timeout)
	for {
		res := settledResult{ok: true}
		for _, smp := range samples {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(smp.obj.GroupVersionKind())
			key := client.ObjectKey{Namespace: smp.namespace, Name: smp.obj.GetName()}
			state := "not found"
			if err := cl.Get(ctx, key, live); err == nil {
				state = "no conditions yet"
				ready, degraded := condition(live, "Ready"), condition(live, "Degraded")
				switch {
				case ready != nil && ready["status"] == "True":
					state = "Ready"
				case degraded != nil && degraded["status"] == "True" && !smp.mustRun:
					state = fmt.Sprintf("not Ready, %v: %v", degraded["reason"], degraded["message"])
				default:
					res.ok = false
					if ready != nil {
						state = fmt.Sprintf("waiting, %v: %v", ready["reason"], ready["message"])
					}
				}
			} else {
				res.ok = false
			}
			res.lines = append(res.lines, fmt.Sprintf("%-20s %s/%s: %s", smp.obj.GetKind(), smp.namespace, smp.obj.GetName(), state))
		}
		if res.ok || time.Now().After(deadline) || ctx.Err() != nil {
			return res
		}
		time.Sleep(time.Second)
	}
}

func condition(obj *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m
		}
	}
	return nil
}

// operatorProcess is the manager running as a child process.
type operatorProcess struct {
	cmd    *exec.Cmd
	exited chan error
}

// stop asks the manager to shut down gracefully, and kills it after 15s.
func (o *operatorProcess) stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.exited:
	case <-time.After(15 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.exited
	}
}

// startOperator runs the manager as its own process against the cluster and
// waits for its readiness probe.
// demoOperatorImage is the reference the demo gives the operator's image on
// its nodes.
const demoOperatorImage = "app-operator:demo"

// pushOperatorImage builds the operator's image and loads it on every node.
func pushOperatorImage(ctx context.Context, c *cluster.Cluster, root string) error {
	dir, err := os.MkdirTemp("", "app-operator-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	archive, err := cluster.BuildOperatorImage(root, dir, demoOperatorImage)
	if err != nil {
		return err
	}
	return c.PushImageArchive(ctx, archive, demoOperatorImage)
}

func startOperator(ctx context.Context, bin string, c *cluster.Cluster, args ...string) (*operatorProcess, error) {
	// The Go runtime settings of the manager's Deployment.
	env, err := cluster.ManagerEnv()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	probe := "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	logFile, err := os.Create(filepath.Join(c.Dir, "logs", "app-operator.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + c.Kubeconfig, "--health-probe-bind-address=" + probe, "--metrics-bind-address=0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	op := &operatorProcess{cmd: cmd, exited: make(chan error, 1)}
	go func() { op.exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-op.exited:
			return nil, fmt.Errorf("operator exited: %v (log: %s)", err, logFile.Name())
		case <-ctx.Done():
			op.stop()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + probe + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return op, nil
			}
		}
	}
	op.stop()
	return nil, fmt.Errorf("operator not ready within 60s (log: %s)", logFile.Name())
}

func printAccess(c *cluster.Cluster) {
	step("The cluster is running; Ctrl-C stops everything")
	fmt.Printf("Point kubectl at it from another terminal:\n\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n  kubectl get nodes\n\n",
		c.Kubeconfig, c.BinDir())
}

func stopCluster(c *cluster.Cluster) {
	step("Stopping the cluster")
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "Error stopping the cluster:", err)
	}
	fmt.Println("Stopped; logs kept in", filepath.Join(c.Dir, "logs"))
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }
