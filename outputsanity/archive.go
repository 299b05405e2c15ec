package outputsanity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Archive file names inside runs/<run_id>/ (benchjob's RequestsFile and
// ManifestFile; a test pins them to benchjob's).
const (
	RequestsFile = "requests.jsonl"
	ManifestFile = "manifest.json"
	// partialFile is what a bench job that did not finish leaves instead of
	// requests.jsonl.
	partialFile = RequestsFile + ".partial"
)

// CheckArchive says whether dir looks like a finished bench archive
// (holds requests.jsonl), so a caller can fail before any other work.
func CheckArchive(dir string) error {
	p := filepath.Join(dir, RequestsFile)
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, perr := os.Stat(filepath.Join(dir, partialFile)); perr == nil {
			return fmt.Errorf("bench archive %s is incomplete: %s but no %s (the bench job did not finish)", dir, partialFile, RequestsFile)
		}
		return fmt.Errorf("bench archive %s: no %s (want the runs/<run_id> directory of the bench job)", dir, RequestsFile)
	case err != nil:
		return fmt.Errorf("bench archive: %w", err)
	case st.IsDir():
		return fmt.Errorf("bench archive: %s is a directory", p)
	}
	return nil
}

// ReadArchive counts the suspicious outputs of the bench archive in dir
// (runs/<run_id>): dir/requests.jsonl, and extras.ignore_eos from
// dir/manifest.json when that file is there. Errors name the file and line.
func ReadArchive(dir string) (Counts, error) {
	if err := CheckArchive(dir); err != nil {
		return Counts{}, err
	}
	p := filepath.Join(dir, RequestsFile)
	f, err := os.Open(p)
	if err != nil {
		return Counts{}, fmt.Errorf("bench archive: %w", err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return Counts{}, fmt.Errorf("bench archive %s: %w", p, err)
	}
	m, err := readManifest(dir)
	if err != nil {
		return Counts{}, err
	}
	c.IgnoreEOS = m.Config.Extras.IgnoreEOS
	return c, nil
}

// ArchiveRunID is the run id in dir/manifest.json; "" when the archive has
// no manifest.
func ArchiveRunID(dir string) (string, error) {
	m, err := readManifest(dir)
	return m.RunID, err
}

// manifest is the part of benchjob's manifest.json the counts read.
type manifest struct {
	RunID  string `json:"run_id"`
	Config struct {
		Extras struct {
			IgnoreEOS *bool `json:"ignore_eos"`
		} `json:"extras"`
	} `json:"config"`
}

// readManifest reads dir/manifest.json; the zero value when it is absent.
func readManifest(dir string) (manifest, error) {
	var m manifest
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("bench archive: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("bench archive %s: %w", path, err)
	}
	return m, nil
}
