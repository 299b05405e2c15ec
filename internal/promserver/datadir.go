package promserver

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDataDir reports whether dir holds a TSDB written by a Server (a WAL or
// at least one block), so that serving an earlier run's data never starts
// silently on an empty or mistyped directory.
func CheckDataDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("TSDB data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("TSDB data directory %s: not a directory", dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "wal")); err == nil && fi.IsDir() {
		return nil
	}
	metas, err := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	if err != nil {
		return fmt.Errorf("TSDB data directory %s: %w", dir, err)
	}
	if len(metas) > 0 {
		return nil
	}
	return fmt.Errorf("TSDB data directory %s: no TSDB there (neither a wal/ directory nor a block): %w", dir, fs.ErrNotExist)
}
