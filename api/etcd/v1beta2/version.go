package v1beta2

import (
	"strconv"
	"strings"
)

// Version is an etcd version, MAJOR.MINOR.PATCH.
// +kubebuilder:object:generate=false
type Version struct{ Major, Minor, Patch int }

// ParseVersion parses MAJOR.MINOR.PATCH.
func ParseVersion(s string) (Version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return Version{}, false
		}
		v[i] = n
	}
	return Version{v[0], v[1], v[2]}, true
}

// MinimumVersion is the first etcd version the operator manages: it speaks
// etcd's API through the gateway at /v3, which 3.2 serves only at /v3alpha
// and 3.3 at /v3beta, and adds members as learners, which came with 3.4.
var MinimumVersion = Version{Major: 3, Minor: 4, Patch: 0}

// String is v as MAJOR.MINOR.PATCH.
func (v Version) String() string {
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) + "." + strconv.Itoa(v.Patch)
}

// Less reports whether v is before w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// LowestVersion is the lowest of versions, as written there; empty when
// none is a version.
func LowestVersion(versions []string) string {
	lowest, found := Version{}, ""
	for _, s := range versions {
		if v, ok := ParseVersion(s); ok && (found == "" || v.Less(lowest)) {
			lowest, found = v, s
		}
	}
	return found
}

// Image is the image of etcd version of the spec's repository.
func (s *EtcdClusterSpec) Image(version string) string {
	repository := s.Repository
	if repository == "" {
		repository = DefaultRepository
	}
	return repository + ":v" + version
}
