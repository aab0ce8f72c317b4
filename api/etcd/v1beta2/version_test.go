package v1beta2

import "testing"

func TestParseVersion(t *testing.T) {
	for s, ok := range map[string]bool{"3.2.13": true, "3.6.0": true, "10.0.1": true, "3.6": false, "v3.6.0": false, "3.06.0": false, "3.6.0-rc": false, "": false, "3..1": false} {
		if _, got := ParseVersion(s); got != ok {
			t.Errorf("ParseVersion(%q) ok = %v, want %v", s, got, ok)
		}
	}
}

func TestLowestVersion(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{nil, ""},
		{[]string{"", "unknown"}, ""},
		{[]string{"3.6.1", "3.5.24", "3.6.0"}, "3.5.24"},
		{[]string{"3.10.0", "3.9.9"}, "3.9.9"},
		{[]string{"", "3.6.0"}, "3.6.0"},
	} {
		if got := LowestVersion(tc.versions); got != tc.want {
			t.Errorf("LowestVersion(%q) = %q, want %q", tc.versions, got, tc.want)
		}
	}
}

func TestImage(t *testing.T) {
	if got, want := (&EtcdClusterSpec{}).Image("3.6.0"), DefaultRepository+":v3.6.0"; got != want {
		t.Errorf("image of the default repository %q, want %q", got, want)
	}
	if got, want := (&EtcdClusterSpec{Repository: "registry.example/etcd"}).Image("3.5.24"), "registry.example/etcd:v3.5.24"; got != want {
		t.Errorf("image %q, want %q", got, want)
	}
}
