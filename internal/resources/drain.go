package resources

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// DrainSeconds is how long a stopping container that serves behind a
// Service keeps running before it is told to stop: time for kube-proxy (and
// any load balancer) to stop sending it new connections once its endpoint
// is marked terminating. Without it, a rolling update refuses the
// connections that still reach a pod whose server has closed its socket.
const DrainSeconds = 10

// DrainLifecycle is the preStop hook that waits DrainSeconds, with the
// kubelet's own sleep action: the image needs no shell.
func DrainLifecycle() *corev1ac.LifecycleApplyConfiguration {
	return corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().WithSleep(corev1ac.SleepAction().WithSeconds(DrainSeconds)))
}
