// Command bench measures the operator on the full local cluster (see
// package test/bench) and writes a table to stdout, and results.json,
// summary.md and bench.png into a folder of its own.
//
//	make bench                      # N=1000
//	make bench BENCH_N=5000,10000   # larger N on request
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/app-operator/app-operator/test/bench"
	"github.com/app-operator/app-operator/test/cluster"
)

func main() {
	bench.RunRole()
	// A flag set of its own: the global one also holds the --kubeconfig
	// flag a library registers, which the benchmark, running its own
	// clusters, would ignore.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	var (
		operator  = fs.String("operator", "", "The operator binary; empty builds one from this repository into the output folder.")
		ns        = fs.String("n", "1000", "Comma-separated numbers of applications.")
		kinds     = fs.String("workloads", strings.Join(bench.WorkloadNames(), ","), "Comma-separated workloads; the first also gets the worker sweep and the memory ramp.")
		workers   = fs.Int("workers", 4, "The operator's --max-concurrent-reconciles, and the bare client's concurrency.")
		sweep     = fs.String("sweep", "1,16", "Further worker counts measured (cold converge) for the first workload at the first N; empty for none.")
		repeat    = fs.Int("repeat", 3, "Times the first workload's cold converge, and its bare client, are measured at each N (the bare client first in every other pair); the ratio reported is their median.")
		perNS     = fs.Int("per-namespace", 100, "Applications per namespace.")
		memory    = fs.Bool("memory", true, "Run the memory ramp against the informer floor.")
		memOnly   = fs.Bool("memory-only", false, "Run only the memory ramp.")
		cgroup    = fs.Bool("cgroup", true, "Run the operator in a memory cgroup of its own, under the benchmark's, and report its working set as the kubelet computes it (needs root; cgroup v1, or v2 with the memory controller enabled for the benchmark's children).")
		opOnly    = fs.Bool("operator-only", false, "Measure each case's operator once, without the bare client (no converge ratio): quicker, for its writes and memory.")
		unrelated = fs.Int("unrelated", 10000, "Unrelated ConfigMaps and Secrets added at the end of the memory ramp.")
		out       = fs.String("out", "", "Output folder; bin/bench/<date> when empty.")
		opEnv     = fs.String("operator-env", "", "Comma-separated NAME=value added to the operator's environment, after what config/manager/manager.yaml sets (GOGC, GOMEMLIMIT), e.g. GOGC=50.")
	)
	_ = fs.Parse(os.Args[1:])
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir := cmp.Or(*out, filepath.Join("bin", "bench", time.Now().UTC().Format("2006-01-02T150405Z")))
	if dir, err = filepath.Abs(dir); err != nil {
		fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	op := *operator
	if op == "" {
		if op, err = bench.BuildOperator(dir); err != nil {
			fail(err)
		}
	}
	if op, err = filepath.Abs(op); err != nil {
		fail(err)
	}
	env, err := cluster.ManagerEnv()
	if err != nil {
		fail(err)
	}
	cfg := bench.Config{
		Operator: op, Self: self, Workers: *workers, Repeat: *repeat, PerNamespace: *perNS,
		Memory: *memory, MemoryOnly: *memOnly, OperatorOnly: *opOnly, Cgroup: *cgroup, Unrelated: *unrelated, Progress: os.Stderr, ProfileDir: dir,
		Workloads: split(*kinds), OperatorEnv: append(env, split(*opEnv)...),
	}
	if cfg.N, err = ints(*ns); err != nil {
		fail(err)
	}
	if cfg.Sweep, err = ints(*sweep); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fail(err)
	}
	bench.WriteTable(os.Stdout, res)
	if err := bench.WriteFiles(dir, res, "go run ./hack/bench "+strings.Join(os.Args[1:], " ")); err != nil {
		fail(err)
	}
	fmt.Println("Results in", dir)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
