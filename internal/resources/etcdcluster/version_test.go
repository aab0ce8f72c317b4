package etcdcluster

import (
	"strings"
	"testing"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

func TestUnsupported(t *testing.T) {
	for version, refused := range map[string]bool{
		"3.2.13": true, "3.3.25": true, "2.3.8": true,
		"3.4.0": false, "3.5.21": false, "3.6.16": false, "4.0.0": false,
		// Not a version: admission refuses it, and the planner says so.
		"": false, "v3.2.13": false,
	} {
		f := Unsupported(&etcdv1beta2.EtcdClusterSpec{Size: 3, Version: version})
		if (f != nil) != refused {
			t.Errorf("%q: refused %v, want %v", version, f != nil, refused)
			continue
		}
		if f != nil && (f.Reason != etcdv1beta2.ReasonVersionUnsupported || !strings.Contains(f.Message, "spec.version "+version+" is below 3.4.0")) {
			t.Errorf("%q: %s, want %s naming spec.version", version, f, etcdv1beta2.ReasonVersionUnsupported)
		}
	}
}
