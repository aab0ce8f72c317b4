package kinds

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The docs list every kind in three places, which these tests hold to All:
// the README's table of kinds, the README's list of CRDs to delete on
// uninstall, and docs/design.md's list of field managers.

func TestTheREADMEsTableListsEveryKind(t *testing.T) {
	rows := matches(t, "README.md", "(?m)^\\| `(\\w+)` \\| `([\\w./-]+)` \\|")
	want, got := make([]string, 0, len(All())), make([]string, 0, len(rows))
	for _, k := range All() {
		want = append(want, k.GVK.Kind+" "+k.GVK.GroupVersion().String())
	}
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2])
	}
	if !slices.Equal(got, want) {
		t.Errorf("the README's table of kinds lists\n%q\nwant, in the order of kinds.All:\n%q", got, want)
	}
}

func TestTheREADMEsUninstallDeletesEveryCRD(t *testing.T) {
	found := matches(t, "README.md", `(?m)^  ([a-z0-9.-]+\.[a-z0-9.-]+)(?: \\)?$`)
	got, want := make([]string, 0, len(found)), make([]string, 0, len(All()))
	for _, r := range found {
		got = append(got, r[1])
	}
	for _, k := range All() {
		want = append(want, k.CRD())
	}
	if !slices.Equal(got, want) {
		t.Errorf("the README's uninstall deletes the CRDs\n%q\nwant:\n%q", got, want)
	}
}

func TestTheDesignListsEveryFieldManager(t *testing.T) {
	found := matches(t, filepath.Join("docs", "design.md"), "(?m)^- `app-operator-(\\w+)`$")
	got, want := make([]string, 0, len(found)), make([]string, 0, len(All()))
	for _, r := range found {
		got = append(got, r[1])
	}
	for _, k := range All() {
		want = append(want, k.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/design.md lists the field managers of\n%q\nwant:\n%q", got, want)
	}
}

// matches returns the submatches of the pattern in the file, relative to
// the repository's root.
func matches(t *testing.T, file, pattern string) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(pattern).FindAllStringSubmatch(string(data), -1)
}
