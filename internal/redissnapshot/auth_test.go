package redissnapshot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAuthConfigQuotesThePassword(t *testing.T) {
	for password, want := range map[string]string{
		"s3cret":      `"s3cret"`,
		"two words":   `"two words"`,
		`q"uote\back`: `"q\"uote\\back"`,
		"line\nbreak": `"line\x0abreak"`,
		"é#;":         `"\xc3\xa9#;"`,
	} {
		got := AuthConfig("app", password)
		wantConf := "# Written at the node's start from its password Secret.\n" +
			"requirepass " + want + "\n" +
			"masterauth " + want + "\n" +
			`user "app" on ">` + want[1:] + " ~* &* +@all\n"
		if got != wantConf {
			t.Errorf("password %q:\n%s\nwant\n%s", password, got, wantConf)
		}
	}
}

func TestWriteAuthLeavesAFileOnlyItsOwnerReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.conf")
	if err := WriteAuth(path, "app", "pw"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if data, _ := os.ReadFile(path); string(data) != AuthConfig("app", "pw") {
		t.Errorf("file %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("folder holds %v, want the file alone", entries)
	}
	if err := WriteAuth(path, "app", ""); err == nil {
		t.Error("an empty password was written")
	}
}
