package bench

import (
	"context"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The benchmark runs this test binary again as its bare client and its
	// informer floor.
	RunRole()
	os.Exit(m.Run())
}

// TestBenchSmoke runs every scenario of the benchmark with 50 AppServices
// on a fresh full local cluster, so that the harness keeps working; `make
// bench` runs the real sizes.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the full local cluster")
	}
	dir := t.TempDir()
	op, err := BuildOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{
		Operator: op, Self: self, N: []int{50}, Workloads: []string{"appservice"},
		Workers: 4, PerNamespace: 25, Memory: true, Unrelated: 200, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 1 || res.Memory == nil || len(res.Memory.Points) < 2 {
		t.Fatalf("incomplete results: %+v", res)
	}
	c := res.Cases[0]
	if c.ConvergeSeconds <= 0 || c.BareSeconds <= 0 || c.ProbeIdleSeconds <= 0 {
		t.Errorf("missing timings: %+v", c)
	}
	// A restart over converged resources writes nothing: the operator's
	// promise, checked here as well as in the controller tests.
	if n := c.RestartWrites.total(); n != 0 {
		t.Errorf("a restart over %d converged AppServices made %d writes, want 0: %v", c.N, n, c.RestartWrites)
	}
	if err := WriteFiles(dir, res, "go test ./test/bench -run TestBenchSmoke"); err != nil {
		t.Fatal(err)
	}
	var b testWriter = testWriter{t}
	WriteTable(b, res)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
