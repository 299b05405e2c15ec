package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Report file names inside the output directory.
const (
	FileJSON     = "report.json"
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
)

// ErrExists is returned when the output directory already holds files.
var ErrExists = errors.New("output directory exists and is not empty")

// Marshal is report.json's content: r indented, with a final newline.
func Marshal(r any) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", FileJSON, err)
	}
	return append(b, '\n'), nil
}

// Files are a report directory's three files, rendered.
type Files struct {
	JSON, Markdown, HTML []byte
}

// Write writes the files into dir, all at once: they are written into a
// temporary sibling directory which is then renamed to dir. It never
// overwrites: when dir exists and is not empty it fails with ErrExists and
// writes nothing.
func Write(dir string, f Files) error {
	dir = filepath.Clean(dir)
	if err := CheckFree(dir); err != nil {
		return err
	}
	tmp, err := stage(dir, f)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone once renamed; left over on an error
	// An empty dir (e.g. made by the caller) is replaced; os.Remove only
	// removes empty directories, so nothing can be lost here.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, ErrExists)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("moving the report into %s: %w", dir, err)
	}
	return nil
}

// WriteKeeping is Write for a report's default directory (a re-analysis
// of the same run): when dir already holds files, they are kept, moved to
// the first free dir.N (N = 1, 2, …), and the new report takes dir's
// place. On Linux the two directories are swapped in one atomic rename, so
// dir always holds a complete report. It returns where the earlier report
// went, "" when there was none.
func WriteKeeping(dir string, f Files) (kept string, err error) {
	dir = filepath.Clean(dir)
	if err := CheckFree(dir); !errors.Is(err, ErrExists) {
		if err != nil {
			return "", err
		}
		return "", Write(dir, f)
	}
	tmp, err := stage(dir, f)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone once renamed; left over on an error
	kept, err = freeSibling(dir)
	if err != nil {
		return "", err
	}
	if err := exchangeDirs(tmp, dir); err == nil {
		// tmp now holds the earlier report; dir the new one.
		if err := os.Rename(tmp, kept); err != nil {
			return "", fmt.Errorf("keeping the earlier report of %s as %s: %w (it is in %s)", dir, kept, err, tmp)
		}
		return kept, nil
	}
	if err := os.Rename(dir, kept); err != nil {
		return "", fmt.Errorf("keeping the earlier report of %s as %s: %w", dir, kept, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("moving the report into %s: %w (the earlier one is in %s)", dir, err, kept)
	}
	return kept, nil
}

// freeSibling is the first of dir.1, dir.2, … that does not exist.
func freeSibling(dir string) (string, error) {
	for n := 1; n <= 10000; n++ {
		p := fmt.Sprintf("%s.%d", dir, n)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", fmt.Errorf("looking for a name to keep the earlier report of %s: %w", dir, err)
		}
	}
	return "", fmt.Errorf("%s.1 to %s.10000 all exist: remove earlier reports or choose --out", dir, dir)
}

// stage writes the files into a new temporary directory beside dir and
// returns it.
func stage(dir string, f Files) (string, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("creating a temporary directory beside %s: %w", dir, err)
	}
	for _, file := range []struct {
		name string
		data []byte
	}{{FileJSON, f.JSON}, {FileMarkdown, f.Markdown}, {FileHTML, f.HTML}} {
		if err := writeSynced(filepath.Join(tmp, file.name), file.data); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("chmod %s: %w", tmp, err)
	}
	return tmp, nil
}

// CheckFree fails when dir exists and is not an empty directory (with
// ErrExists when it holds files): Write would refuse it.
func CheckFree(dir string) error {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Writing replaces dir by rename: the link itself would go.
		target, _ := os.Readlink(dir)
		return fmt.Errorf("output %s is a symbolic link (to %s); give the directory itself or a new one", dir, target)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s (%d entries; choose a new --out): %w", dir, len(entries), ErrExists)
	}
	return nil
}

// writeSynced creates path (it must not exist) with data, synced to disk.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	return nil
}
