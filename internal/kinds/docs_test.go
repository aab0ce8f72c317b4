package kinds

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheDocsListEveryKind holds to All the three places the docs list
// every kind: the README's table of kinds, docs/install.md's list of CRDs
// to delete on uninstall, and docs/design.md's list of field managers. Each
// must list every kind, in the order of All, and nothing else.
func TestTheDocsListEveryKind(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		// pattern matches one entry; its submatches, joined by spaces,
		// are what the entry says.
		pattern string
		want    func(Kind) string
	}{
		{"the README's table of kinds", "README.md", "(?m)^\\| `(\\w+)` \\| `([\\w./-]+)` \\|",
			func(k Kind) string { return k.GVK.Kind + " " + k.GVK.GroupVersion().String() }},
		{"the install's uninstall", filepath.Join("docs", "install.md"), `(?m)^  ([a-z0-9.-]+\.[a-z0-9.-]+)(?: \\)?$`,
			Kind.CRD},
		{"the design's field managers", filepath.Join("docs", "design.md"), "(?m)^- `app-operator-(\\w+)`$",
			Kind.Name},
	} {
		data, err := os.ReadFile(filepath.Join(repoRoot, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile(tc.pattern).FindAllStringSubmatch(string(data), -1)
		got := make([]string, 0, len(found))
		for _, m := range found {
			got = append(got, strings.Join(m[1:], " "))
		}
		want := make([]string, 0, len(All()))
		for _, k := range All() {
			want = append(want, tc.want(k))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s (%s) lists\n%q\nwant, in the order of kinds.All:\n%q", tc.name, tc.file, got, want)
		}
	}
}
