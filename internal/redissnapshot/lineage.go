package redissnapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// rdbFile is the RDB Redis writes on SIGTERM (shutdown-on-sigterm save),
// in its data folder.
const rdbFile = "dump.rdb"

// ReadLineage says how far the data in the folder dir got, from what Redis
// left there: the replication ID and offset of its last RDB, when no write
// reached the append-only file after it (Redis writes the RDB on SIGTERM,
// after the last write; a node killed, or one whose RDB came from a full
// sync, has later writes); or, on a folder that a restore laid out, of the
// append-only file's base while nothing follows it. Anything else is not
// known, and says why.
func ReadLineage(dir string) redisbackup.Lineage {
	aof, err := aofFiles(dir)
	if err != nil {
		return redisbackup.Lineage{Why: err.Error()}
	}
	rdb, err := os.Stat(filepath.Join(dir, rdbFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rdb = nil
	case err != nil:
		return redisbackup.Lineage{Why: err.Error()}
	}
	var latest time.Time
	var base string
	written, appended := false, false
	for _, f := range aof {
		latest = later(latest, f.mod)
		switch {
		case strings.HasSuffix(f.name, ".manifest"):
		case strings.HasSuffix(f.name, ".base.rdb"):
			base = f.path
			written = written || f.size > 0
		default:
			written = written || f.size > 0
			appended = appended || f.size > 0
		}
	}
	if appended {
		base = ""
	}
	switch {
	case rdb == nil && !written:
		return redisbackup.Lineage{Known: true, Empty: true}
	case rdb != nil && !rdb.ModTime().Before(latest):
		return positionOf(filepath.Join(dir, rdbFile))
	case rdb == nil && base != "":
		return positionOf(base)
	case rdb == nil:
		return redisbackup.Lineage{Why: "the append-only file has no RDB that says how far it got (Redis did not stop on SIGTERM)"}
	}
	return redisbackup.Lineage{Why: "writes reached the append-only file after the last RDB (Redis did not stop on SIGTERM)"}
}

// positionOf reads the position the RDB at path records.
func positionOf(path string) redisbackup.Lineage {
	hdr, err := fileHeader(path)
	if err != nil {
		return redisbackup.Lineage{Why: err.Error()}
	}
	if hdr.ReplicationID == "" {
		return redisbackup.Lineage{Why: fmt.Sprintf("%s records no replication position (the node was in no replication when it wrote it)", filepath.Base(path))}
	}
	return redisbackup.Lineage{Known: true, ReplicationID: hdr.ReplicationID, Offset: hdr.Offset}
}

type aofEntry struct {
	path, name string
	size       int64
	mod        time.Time
}

// aofFiles lists the files of the append-only file: those of its folder,
// and a single-file one of an older Redis.
func aofFiles(dir string) ([]aofEntry, error) {
	var out []aofEntry
	add := func(path string) error {
		st, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st.Mode().IsRegular() {
			out = append(out, aofEntry{path: path, name: st.Name(), size: st.Size(), mod: st.ModTime()})
		}
		return nil
	}
	if err := add(filepath.Join(dir, "appendonly.aof")); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(dir, aofDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if err := add(filepath.Join(dir, aofDir, e.Name())); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
