// Package atomicfile writes files so that a reader never sees a partial one:
// the data goes to a temporary file in the same folder, is synced, and only
// then takes the final name.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with mode 0644, replacing the file there if
// any: a temporary file beside path, synced, then renamed over it.
func WriteFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteFileNew writes data to path with mode 0644 and never replaces an
// existing file, so an earlier result is never overwritten: a temporary
// file beside path, synced, then hard-linked to path. The error for an
// existing path wraps fs.ErrExist.
func WriteFileNew(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("writing %s: %w; refusing to overwrite an earlier result", path, fs.ErrExist)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data to a new temporary file beside path, mode 0644,
// synced and closed, and returns its name. On error nothing is left behind.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return name, nil
}
