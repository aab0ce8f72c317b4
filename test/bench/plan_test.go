package bench

import (
	"fmt"
	"slices"
	"testing"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

func TestPlan(t *testing.T) {
	all := []string{"appservice", "microservicedeploy", "memcached", "myweb", "appservice-pods"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // workload N workers full repeat
	}{
		{"defaults", Config{N: []int{1000}, Workloads: all, Workers: 4, Sweep: []int{1, 16}, Repeat: 3}, []string{
			"appservice 1000 4 full ×3", "appservice 1000 1 ×1", "appservice 1000 16 ×1",
			"microservicedeploy 1000 4 full ×1", "memcached 1000 4 full ×1", "myweb 1000 4 full ×1", "appservice-pods 100 4 full ×1",
		}},
		// MyWeb's node ports cap it.
		{"myweb capped", Config{N: []int{5000}, Workloads: []string{"myweb"}, Workers: 4, Repeat: 1}, []string{
			"myweb 2766 4 full ×1",
		}},
		{"the sweep and the repeats at the first N only; the repeats at every N", Config{N: []int{1000, 5000}, Workloads: []string{"appservice", "memcached"},
			Workers: 4, Sweep: []int{4, 16}, Repeat: 2}, []string{
			"appservice 1000 4 full ×2", "appservice 1000 16 ×1", "memcached 1000 4 full ×1",
			"appservice 5000 4 full ×2", "memcached 5000 4 full ×1",
		}},
		// A capped workload leaves the N of the workloads after it alone.
		{"capped workload first", Config{N: []int{1000}, Workloads: []string{"appservice-pods", "appservice"}, Workers: 4, Repeat: 1}, []string{
			"appservice-pods 100 4 full ×1", "appservice 1000 4 full ×1",
		}},
		{"repeat at least once", Config{N: []int{50}, Workloads: []string{"memcached"}, Workers: 2}, []string{
			"memcached 50 2 full ×1",
		}},
		{"memory only", Config{N: []int{5000}, Workloads: all, Workers: 4, Sweep: []int{1}, Repeat: 3, MemoryOnly: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := plan(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cases {
				s := fmt.Sprintf("%s %d %d", c.workload.name, c.n, c.workers)
				if c.full {
					s += " full"
				}
				got = append(got, fmt.Sprintf("%s ×%d", s, c.repeat))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if _, err := plan(Config{N: []int{10}, Workloads: []string{"appservice", "nope"}}); err == nil {
		t.Error("an unknown workload was accepted")
	}
}

// Every MyWeb the benchmark creates, the probes included, takes a node port
// of its own inside the API server's default range.
func TestMyWebNodePorts(t *testing.T) {
	w := workloads["myweb"]
	seen := map[int32]string{}
	take := func(name string, i int) {
		port := w.newObject("ns", name, i).(*operatorv1.MyWeb).Spec.NodePortNumber
		if port < firstNodePort || port > lastNodePort {
			t.Errorf("%s: node port %d outside %d-%d", name, port, firstNodePort, lastNodePort)
		}
		if other, ok := seen[port]; ok {
			t.Errorf("%s and %s share node port %d", name, other, port)
		}
		seen[port] = name
	}
	for i := range w.maxN {
		take(fmt.Sprintf("app-%05d", i), i)
	}
	take("probe-backlog", 0)
	take("probe-idle", 0)
}
