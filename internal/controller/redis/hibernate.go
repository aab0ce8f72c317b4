package redis

import (
	"fmt"

	"github.com/app-operator/app-operator/internal/engine"
)

// runningPods counts the nodes whose pods exist, terminating or not.
func runningPods(nodes []redisNode) int {
	n := 0
	for _, node := range nodes {
		if node.pod != nil {
			n++
		}
	}
	return n
}

// hibernationStep is the step of a hibernating cluster: none. A step
// already taken finished within its own pass; the steps after it (a
// roll, a handover, a failover) are held until the cluster wakes, when
// the planner decides again from what the nodes hold. While pods remain
// the pass looks again soon.
func hibernationStep(nodes []redisNode) engine.Step {
	if n := runningPods(nodes); n > 0 {
		return engine.Step{Waiting: fmt.Sprintf("Hibernating: waiting for %d pods to stop", n), RequeueAfter: redisWaitInterval}
	}
	return engine.Step{RequeueAfter: redisRecheck}
}
