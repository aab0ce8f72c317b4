package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
)

// RoleEnv names the environment variable that makes the benchmark's
// executable (the bench command, or the test binary) run as one of its
// helper processes instead: "bare", "floor" or "watching-floor".
const RoleEnv = "APP_OPERATOR_BENCH_ROLE"

// RunRole runs the role named by RoleEnv, if any, and exits; it returns
// when the variable is unset. Call it first thing in main (or TestMain).
// It also sets controller-runtime's logger, which the benchmark does not
// read.
func RunRole() {
	// The benchmark's own clients log nothing worth reading.
	ctrllog.SetLogger(logr.Discard())
	role := os.Getenv(RoleEnv)
	if role == "" {
		return
	}
	var (
		out any
		err error
	)
	switch role {
	case "bare":
		out, err = bare(context.Background())
	case "floor":
		out, err = floor(context.Background())
	case "watching-floor":
		out, err = watchingFloor(context.Background())
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(0)
}

// bareResult is what the bare client reports.
type bareResult struct {
	Apps   int   `json:"apps"`
	Writes int64 `json:"writes"`
}

// bare is the baseline: a plain client, as the operator's ServiceAccount and
// without client-side rate limit, that reads the resources once and, with
// as many workers as the operator has, applies for each the children the
// operator's own builders make (server-side apply, the operator's field
// owner), then writes its status once. No cache, no comparison, no retry:
// the least work that gets every resource its children and a status.
func bare(ctx context.Context) (bareResult, error) {
	var res bareResult
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("BENCH_KUBECONFIG"))
	if err != nil {
		return res, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		return res, err
	}
	w, ok := workloads[os.Getenv("BENCH_WORKLOAD")]
	if !ok {
		return res, fmt.Errorf("unknown workload %q", os.Getenv("BENCH_WORKLOAD"))
	}
	workers, _ := strconv.Atoi(os.Getenv("BENCH_WORKERS"))
	workers = max(workers, 1)
	var objs []client.Object
	for _, ns := range strings.Split(os.Getenv("BENCH_NAMESPACES"), ",") {
		list := newList(w)
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return res, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return res, err
		}
		for _, item := range items {
			objs = append(objs, item.(client.Object))
		}
	}
	work := make(chan client.Object)
	var writes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				if err := bareOne(ctx, c, w, obj, &writes); err != nil {
					errs <- err
					for range work {
					}
					return
				}
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	res.Apps, res.Writes = len(objs), writes.Load()
	return res, nil
}

func bareOne(ctx context.Context, c client.Client, w workload, obj client.Object, writes *atomic.Int64) error {
	if err := applyChildren(ctx, c, w, obj, writes); err != nil {
		return err
	}
	return writeReady(ctx, c, obj, writes)
}

// applyChildren applies the children the operator's builders make for obj,
// in order, as the operator's field owner.
func applyChildren(ctx context.Context, c client.Client, w workload, obj client.Object, writes *atomic.Int64) error {
	acs, err := controller.Build(obj, controller.Options{})
	if err != nil {
		return err
	}
	for _, ac := range acs {
		if err := c.Apply(ctx, ac, client.FieldOwner(engine.FieldOwner(w.controller)), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply a child of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		writes.Add(1)
	}
	return nil
}

// writeReady writes obj's status once: its generation observed, Ready.
func writeReady(ctx context.Context, c client.Client, obj client.Object, writes *atomic.Int64) error {
	st := map[string]any{"status": map[string]any{
		"observedGeneration": obj.GetGeneration(),
		"conditions": []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available", Message: "applied by the bare client",
			ObservedGeneration: obj.GetGeneration(), LastTransitionTime: metav1.Now(),
		}},
	}}
	patch, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("write the status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	writes.Add(1)
	return nil
}

// floor runs informers, and nothing else, over the objects the operator's
// cache holds: the five kinds and their children, with the operator's
// cache options. Started once the objects exist, it lists them into a fresh
// heap: its heap is the least an informer-based operator can hold.
func floor(ctx context.Context) (memory, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := startInformers(ctx); err != nil {
		return memory{}, err
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := memoryFrom(&ms)
	if err := readRSS(os.Getpid(), &m); err != nil {
		return m, err
	}
	if path := os.Getenv("BENCH_HEAP_PROFILE"); path != "" {
		return m, writeHeapProfile(path)
	}
	return m, nil
}

// watchingFloor runs the floor's informers from before the first
// application exists until it is stopped (SIGTERM), so that they see every
// object arrive and change as the operator's informers do, and serves the
// Go profiler at BENCH_PPROF_ADDR once they have synced, where the
// benchmark reads its memory as it reads the operator's.
func watchingFloor(ctx context.Context) (struct{}, error) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	if err := startInformers(ctx); err != nil {
		return struct{}{}, err
	}
	l, err := net.Listen("tcp", os.Getenv("BENCH_PPROF_ADDR"))
	if err != nil {
		return struct{}{}, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	<-ctx.Done()
	return struct{}{}, srv.Close()
}

// startInformers starts informers over the objects the operator's cache
// holds, with its scoping, and waits for them to sync.
func startInformers(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("BENCH_KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	byObject := controller.CacheByObject()
	ca, err := cache.New(cfg, cache.Options{Scheme: controller.NewScheme(), ByObject: byObject})
	if err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	// The operator's cache options name every type it caches: the five
	// kinds and their children.
	for o := range byObject {
		if _, err := ca.GetInformer(ctx, o); err != nil {
			return err
		}
	}
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("caches did not sync")
	}
	return nil
}

// writeHeapProfile writes this process's heap profile to path, to be
// compared with the operator's (go tool pprof -diff_base).
func writeHeapProfile(path string) error {
	return writeFile(path, pprof.WriteHeapProfile)
}

// newList returns an empty list of the workload's kind.
func newList(w workload) client.ObjectList {
	switch w.gvr.Resource {
	case "microservicedeploys":
		return &customv1.MicroServiceDeployList{}
	case "memcacheds":
		return &cachev1alpha1.MemcachedList{}
	case "mywebs":
		return &operatorv1.MyWebList{}
	default:
		return &appv1.AppServiceList{}
	}
}
