package controller

import "testing"

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
