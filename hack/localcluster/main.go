// Command localcluster starts the local control plane for people.
//
//	localcluster up [--profile=full|api-only]
//	    start a cluster, print how to reach it, stop it on Ctrl-C
//	localcluster demo --operator=bin/app-operator [--exit-when-ready]
//	    start the full cluster, install the CRDs, run the operator, apply
//	    every sample in config/samples (each in the namespace it names, or one of its own),
//	    wait until each is Ready or says why not, and show the result
package main

import (
	"context"
	"flag"
	"fmt"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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
	fmt.Fprintln(os.Stderr, "usage: localcluster up [--profile=full|api-only] | demo --operator=PATH [--exit-when-ready]")
	os.Exit(2)
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	profile := fs.String("profile", string(cluster.Full), "full or api-only")
	_ = fs.Parse(args)

	c, err := cluster.Start(ctx, cluster.Options{Profile: cluster.Profile(*profile), Progress: os.Stdout})
	if err != nil {
		return err
	}
	defer stopCluster(c)
	printAccess(c)
	<-ctx.Done()
	return nil
}

func demo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	operator := fs.String("operator", "bin/app-operator", "path of the manager binary")
	exitWhenReady := fs.Bool("exit-when-ready", false, "stop everything once every sample is Ready instead of waiting for Ctrl-C")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the samples to become Ready")
	_ = fs.Parse(args)

	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	c, err := cluster.Start(ctx, cluster.Options{Profile: cluster.Full, Progress: os.Stdout})
	if err != nil {
		return err
	}
	defer stopCluster(c)
	kubectl := func(args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir(), "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}

	if _, err := os.Stat(filepath.Join(root, "config", "crd", "kustomization.yaml")); err == nil {
		step("Installing the CRDs")
		if err := kubectl("apply", "--server-side", "-k", "config/crd"); err != nil {
			return err
		}
		if err := kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
			return err
		}
	}

	step("Starting the operator (log: " + filepath.Join(c.Dir, "logs", "app-operator.log") + ")")
	op, err := startOperator(ctx, *operator, c)
	if err != nil {
		return err
	}
	defer op.stop()

	samples, err := loadSamples(root)
	if err != nil {
		return err
	}
	step("Applying every sample in config/samples, each in the namespace it names or one of its own")
	cl, err := client.New(c.Config(), client.Options{})
	if err != nil {
		return err
	}
	for _, smp := range samples {
		// A sample that names its namespace (such as default) goes there.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: smp.namespace}}
		if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", smp.namespace, err)
		}
		if err := kubectl("apply", "-n", smp.namespace, "-f", smp.file); err != nil {
			return err
		}
	}

	step("Waiting until every sample is Ready or reports why not")
	settled := waitSettled(ctx, c, samples, *timeout)

	step("The samples and their children")
	kinds := map[string]bool{}
	var kindList []string
	for _, smp := range samples {
		if !kinds[smp.obj.GetKind()] {
			kinds[smp.obj.GetKind()] = true
			kindList = append(kindList, strings.ToLower(smp.obj.GetKind()))
		}
	}
	_ = kubectl("get", strings.Join(kindList, ","), "-A")
	_ = kubectl("get", "deployments,services,configmaps,serviceaccounts,horizontalpodautoscalers,ingresses,poddisruptionbudgets,resourcequotas,pods", "-A", "-l", "app.kubernetes.io/managed-by=app-operator")
	fmt.Println()
	for _, line := range settled.lines {
		fmt.Println(line)
	}
	if !settled.ok {
		return fmt.Errorf("samples not settled within %s (operator log: %s)", timeout, filepath.Join(c.Dir, "logs", "app-operator.log"))
	}
	if *exitWhenReady {
		return nil
	}
	printAccess(c)
	<-ctx.Done()
	return nil
}

// sample is one file of config/samples and the object in it.
type sample struct {
	file      string
	namespace string
	obj       *unstructured.Unstructured
}

// loadSamples reads config/samples; each sample gets a namespace named after
// its file, since samples of different kinds may share a name, unless it
// names its own namespace: a sample applies unchanged.
func loadSamples(root string) ([]sample, error) {
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []sample
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", f, err)
		}
		stem := strings.TrimSuffix(filepath.Base(f), ".yaml")
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "sample-" + strings.ReplaceAll(stem, "_", "-")
		}
		out = append(out, sample{file: f, namespace: ns, obj: obj})
	}
	return out, nil
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
				case degraded != nil && degraded["status"] == "True":
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
func startOperator(ctx context.Context, bin string, c *cluster.Cluster) (*operatorProcess, error) {
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
	cmd := exec.Command(bin, "--kubeconfig="+c.Kubeconfig, "--health-probe-bind-address="+probe, "--metrics-bind-address=0")
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
	fmt.Printf("Point kubectl at it from another terminal:\n\n  export KUBECONFIG=%s\n  %s get nodes\n\n",
		c.Kubeconfig, filepath.Join(c.BinDir(), "kubectl"))
}

func stopCluster(c *cluster.Cluster) {
	step("Stopping the cluster")
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "Error stopping the cluster:", err)
	}
	fmt.Println("Stopped; logs kept in", filepath.Join(c.Dir, "logs"))
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }
