package etcdcluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodOf is what the planner reads of a member's pod p, whose data is on
// the claim of uid claimUID (empty when it is not there).
func PodOf(p *corev1.Pod, claimUID string) Pod {
	pod := Pod{UID: string(p.UID), ClaimUID: claimUID, TLS: p.Labels[TLSLabel] == "true", Trust: ParseTrust(p.Annotations[TrustAnnotation])}
	for _, c := range p.Spec.Containers {
		if c.Name == ContainerName {
			pod.Image = c.Image
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != ContainerName {
			continue
		}
		pod.CrashLooping = c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff"
		// Ready only as the kubelet reports the container of the pod's
		// image: etcd can answer from a new container before the kubelet
		// has said the old one stopped.
		pod.Ready = c.Ready && c.State.Running != nil && sameImage(c.Image, pod.Image)
	}
	return pod
}

// sameImage reports whether reported, an image as the kubelet reports a
// container's, is image: the same name, or image under a registry host
// the runtime adds.
func sameImage(reported, image string) bool {
	return reported == image || strings.HasSuffix(reported, "/"+image)
}
