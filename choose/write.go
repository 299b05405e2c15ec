package choose

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileNew writes data to path atomically (a temporary file in the same
// directory, then a hard link into place) and never replaces an existing
// file: an earlier result is never overwritten.
func WriteFileNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := bytes.NewReader(data).WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if os.IsExist(err) {
			return fmt.Errorf("write %s: file exists; refusing to overwrite an earlier result", path)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
