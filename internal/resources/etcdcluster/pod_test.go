package etcdcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestSameImage(t *testing.T) {
	for _, tt := range []struct {
		reported, image string
		want            bool
	}{
		{"quay.io/coreos/etcd:v3.7.0", "quay.io/coreos/etcd:v3.7.0", true},
		{"docker.io/library/etcd:v3.7.0", "etcd:v3.7.0", true},
		{"quay.io/coreos/etcd:v3.6.16", "quay.io/coreos/etcd:v3.7.0", false},
		{"quay.io/coreos/xetcd:v3.7.0", "etcd:v3.7.0", false},
		{"", "quay.io/coreos/etcd:v3.7.0", false},
	} {
		if got := sameImage(tt.reported, tt.image); got != tt.want {
			t.Errorf("sameImage(%q, %q) = %v, want %v", tt.reported, tt.image, got, tt.want)
		}
	}
}

func TestPodOf(t *testing.T) {
	const image = "quay.io/coreos/etcd:v3.7.0"
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName, Image: image}}},
			Status: corev1.PodStatus{ContainerStatuses: statuses}}
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want Pod
	}{
		{"no container reported yet", pod(), Pod{Image: image, ClaimUID: "c"}},
		{"the new container ready", pod(corev1.ContainerStatus{Name: ContainerName, Image: image, Ready: true, State: running}),
			Pod{Image: image, ClaimUID: "c", Ready: true}},
		{"the old container still reported ready", pod(corev1.ContainerStatus{Name: ContainerName, Image: "quay.io/coreos/etcd:v3.6.16", Ready: true, State: running}),
			Pod{Image: image, ClaimUID: "c"}},
		{"waiting out a crash loop", pod(corev1.ContainerStatus{Name: ContainerName, Image: image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}),
			Pod{Image: image, ClaimUID: "c", CrashLooping: true}},
		{"started on the CAs its annotation names, with the certificates", func() *corev1.Pod {
			p := pod()
			p.Labels = map[string]string{TLSLabel: "true"}
			p.Annotations = map[string]string{TrustAnnotation: "peer=p1:kp1,p2:kp2;server=s1:ks1"}
			return p
		}(), Pod{Image: image, ClaimUID: "c", TLS: true, Trust: Trust{Peer: []CA{{Cert: "p1", Key: "kp1"}, {Cert: "p2", Key: "kp2"}}, Server: []CA{{Cert: "s1", Key: "ks1"}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, PodOf(tt.pod, "c")); diff != "" {
				t.Errorf("PodOf (-want +got):\n%s", diff)
			}
		})
	}
}
