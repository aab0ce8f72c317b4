package redissnapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AuthConfig is the part of redis.conf that holds a node's password: the
// default user's, the link to the primary's, and that of the named user.
// A node includes it from a file, so that the password is on no command
// line (which every user of the Kubernetes node sees in ps).
func AuthConfig(username, password string) string {
	pw := quote(password)
	return "# Written at the node's start from its password Secret.\n" +
		"requirepass " + pw + "\n" +
		"masterauth " + pw + "\n" +
		"user " + quote(username) + " on " + quote(">"+password) + " ~* &* +@all\n"
}

// quote returns s as one argument of redis.conf: in double quotes, with a
// backslash before a quote or a backslash and every byte outside printable
// ASCII as \xHH, which Redis reads back byte for byte.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteAuth writes AuthConfig to path, readable by its owner only; the
// file appears whole or not at all.
func WriteAuth(path, username, password string) error {
	if password == "" {
		return fmt.Errorf("the password is empty")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".auth-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(AuthConfig(username, password)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
