package promserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/tsdb/fileutil"
)

// closedMarker, in a TSDB directory a Server opened read-write, holds the
// newest modification time of its WAL when that Server closed it: a WAL
// still at that time was last written by a joulemark server that is gone.
const closedMarker = ".joulemark-closed"

// InUse says why another process seems to hold the TSDB in dir ("" when
// none): its Prometheus lock file is locked (a running Prometheus), or its
// WAL was written within recent of now by something other than a Server
// that has closed it (a Prometheus run with --storage.tsdb.no-lockfile,
// as Debian's 2.42 leaves no lock file). Opening such a directory
// read-write adds WAL segments under the writer, which then discards its
// chunks on restart.
func InUse(dir string, recent time.Duration, now time.Time) (string, error) {
	lock := filepath.Join(dir, "lock")
	if _, err := os.Stat(lock); err == nil {
		r, _, err := fileutil.Flock(lock)
		if err != nil {
			return fmt.Sprintf("its lock file %s is held by another process (a running Prometheus?)", lock), nil
		}
		if err := r.Release(); err != nil {
			return "", fmt.Errorf("releasing %s: %w", lock, err)
		}
	}
	newest, err := newestWAL(dir)
	if err != nil || newest.IsZero() {
		return "", err
	}
	if b, err := os.ReadFile(filepath.Join(dir, closedMarker)); err == nil && strings.TrimSpace(string(b)) == strconv.FormatInt(newest.UnixNano(), 10) {
		return "", nil // last written by a joulemark server that closed it
	}
	if age := now.Sub(newest); age < recent {
		return fmt.Sprintf("its WAL was written %s ago (%s) by a process that may still be writing it (a Prometheus without a lock file?)",
			age.Round(time.Second), newest.UTC().Format(time.RFC3339)), nil
	}
	return "", nil
}

// newestWAL is the newest modification time of dir's WAL files (wal/,
// wbl/ and chunks_head/); zero without any.
func newestWAL(dir string) (time.Time, error) {
	var newest time.Time
	for _, sub := range []string{"wal", "wbl", "chunks_head"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return newest, fmt.Errorf("TSDB data directory %s: %w", dir, err)
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil || fi.IsDir() {
				continue
			}
			if fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
		}
	}
	return newest, nil
}

// markClosed records that this server closed dir's WAL (closedMarker).
func markClosed(dir string) error {
	newest, err := newestWAL(dir)
	if err != nil || newest.IsZero() {
		return err
	}
	return os.WriteFile(filepath.Join(dir, closedMarker), []byte(strconv.FormatInt(newest.UnixNano(), 10)+"\n"), 0o644)
}
