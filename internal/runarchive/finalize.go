package runarchive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ErrFinal is wrapped by FinalizeKilled's error when the run already ended
// (its manifest holds a final status).
var ErrFinal = errors.New("run already final")

// Finalize makes the archive final with manifest m: every file still
// named *.partial is turned final (a .jsonl file cut after its last
// complete line, so a write torn by a kill leaves no half record), then m
// is written atomically. m.Status must be a final status. A final file
// that already exists beside its .partial is never replaced.
func (r *Run) Finalize(m *Manifest) error {
	if !Final(m.Status) {
		return fmt.Errorf("run archive %s: finalize with status %q: want completed, aborted, failed or killed", r.Dir, m.Status)
	}
	des, err := os.ReadDir(r.Dir)
	if err != nil {
		return fmt.Errorf("run archive: %w", err)
	}
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), PartialSuffix)
		if !ok || !de.Type().IsRegular() {
			continue
		}
		if err := r.finalizePartial(name); err != nil {
			return err
		}
	}
	return r.WriteManifest(m)
}

// FinalizeKilled finalizes a run the bench did not end (SIGKILL, crash,
// lost machine): status killed, reason in the manifest's error, ended at
// the given time, every .partial file turned final. A run that already
// ended is refused (ErrFinal); so is one without a manifest (it never
// started measuring). It returns the manifest as written.
func (r *Run) FinalizeKilled(reason string, ended time.Time) (*Manifest, error) {
	m, err := r.ReadManifest()
	if err != nil {
		return nil, err
	}
	if Final(m.Status) {
		return nil, fmt.Errorf("run archive %s: status %s: %w", r.Dir, m.Status, ErrFinal)
	}
	m.Status = StatusKilled
	if m.Error == "" {
		m.Error = reason
	}
	if m.Ended == 0 {
		m.Ended = float64(ended.UnixNano()) / 1e9
	}
	if err := r.Finalize(m); err != nil {
		return nil, err
	}
	return m, nil
}

// finalizePartial turns name.partial into name.
func (r *Run) finalizePartial(name string) error {
	f, err := os.OpenFile(r.Path(name+PartialSuffix), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("run archive: %w", err)
	}
	if strings.HasSuffix(name, ".jsonl") {
		if err := truncateToLastLine(f); err != nil {
			f.Close()
			return fmt.Errorf("run archive %s: %s%s: %w", r.Dir, name, PartialSuffix, err)
		}
	}
	return r.Commit(f, name)
}

// truncateToLastLine cuts f after its last '\n' (to empty when it has
// none).
func truncateToLastLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := st.Size(); end > 0; {
		start := max(0, end-chunk)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return truncate(f, st.Size(), start+int64(i)+1)
		}
		end = start
	}
	return truncate(f, st.Size(), 0)
}

func truncate(f *os.File, size, to int64) error {
	if to == size {
		return nil
	}
	return f.Truncate(to)
}
