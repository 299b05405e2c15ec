package runarchive

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreateRefusesExistingRun(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs") // created on demand
	r, err := Create(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "r1" || r.Dir != filepath.Join(runs, "r1") {
		t.Fatalf("Create = %+v", r)
	}
	if err := r.WriteManifest(&Manifest{RunID: "r1", Status: StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	_, err = Create(runs, "r1")
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	m, err := r.ReadManifest()
	if err != nil || m.Status != StatusCompleted {
		t.Fatalf("earlier run's manifest after the refused Create: %+v, %v", m, err)
	}
	// A plain file by that name is refused too.
	if err := os.WriteFile(filepath.Join(runs, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(runs, "f"); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a file: %v, want ErrExists", err)
	}
}

func TestCreateAndOpenRefuseBadIDs(t *testing.T) {
	runs := t.TempDir()
	for _, id := range []string{"", "..", "../x", "a/b", ".hidden"} {
		if _, err := Create(runs, id); err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
		if _, err := Open(runs, id); err == nil {
			t.Errorf("Open(%q) succeeded", id)
		}
	}
	if _, err := Open(runs, "absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing run: %v", err)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadManifest(); !errors.Is(err, ErrNoManifest) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadManifest before any: %v", err)
	}
	on := true
	in := &Manifest{RunID: "r1", Status: StatusRunning, Flags: []string{"x"}, Created: 1.5,
		Config:  map[string]any{"extras": map[string]any{"ignore_eos": on}},
		Load:    LoadInfo{Mode: "closed", Concurrency: 4},
		Summary: &Summary{Started: 7}}
	if err := r.WriteManifest(in); err != nil {
		t.Fatal(err)
	}
	out, err := r.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if out.RunID != "r1" || out.Load.Concurrency != 4 || out.Summary.Started != 7 || out.Created != 1.5 {
		t.Errorf("read back %+v", out)
	}
	if p := out.IgnoreEOS(); p == nil || !*p {
		t.Errorf("IgnoreEOS = %v, want true", p)
	}
	if p := (&Manifest{}).IgnoreEOS(); p != nil {
		t.Errorf("IgnoreEOS without config = %v, want nil", *p)
	}
}

// A failed write leaves the earlier manifest as it was, and no temporary
// file behind.
func TestWriteManifestFailureKeepsEarlier(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteManifest(&Manifest{RunID: "r1", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	bad := &Manifest{RunID: "r1", Status: StatusCompleted, Created: math.NaN()} // not encodable
	if err := r.WriteManifest(bad); err == nil {
		t.Fatal("writing a NaN manifest succeeded")
	}
	m, err := r.ReadManifest()
	if err != nil || m.Status != StatusRunning {
		t.Fatalf("manifest after a failed write: %+v, %v", m, err)
	}
	assertFiles(t, r.Dir, ManifestFile)
}

// A reader never sees a partly written manifest while it is rewritten
// (temporary file, fsync, rename). With a plain os.WriteFile (truncate,
// then write) readers here see empty or cut documents.
func TestWriteManifestIsAtomicForReaders(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	big := map[string]any{}
	for i := range 4000 {
		big[strings.Repeat("k", 8)+string(rune('a'+i%26))+time.Duration(i).String()] = strings.Repeat("v", 16)
	}
	m := &Manifest{RunID: "r1", Status: StatusRunning, Config: big}
	if err := r.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn, reads int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(r.Path(ManifestFile))
			if err != nil {
				continue
			}
			reads++
			if !json.Valid(data) {
				torn++
			}
		}
	})
	for i := range 30 {
		m.Prompts = i
		if err := r.WriteManifest(m); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if torn > 0 {
		t.Fatalf("%d of %d reads saw a partly written manifest", torn, reads)
	}
	if reads == 0 {
		t.Fatal("the reader never read")
	}
}

func TestPartialCommit(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.CreatePartial(RequestsFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreatePartial(RequestsFile); err == nil {
		t.Fatal("a second CreatePartial succeeded")
	}
	if err := r.CheckRequests(); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("CheckRequests with only the partial file: %v", err)
	}
	if _, err := f.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(f, RequestsFile); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckRequests(); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, r.Dir, RequestsFile)
	if _, err := r.CreateFile(RequestsFile); err == nil {
		t.Fatal("CreateFile replaced requests.jsonl")
	}
}

func TestList(t *testing.T) {
	runs := t.TempDir()
	for _, c := range []struct {
		id      string
		created float64
	}{{"b", 20}, {"a", 30}, {"c", 10}} {
		r, err := Create(runs, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteManifest(&Manifest{RunID: c.id, Status: StatusCompleted, Created: c.created}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Create(runs, "no-manifest"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".tmp", "report.json"} { // not runs
		if err := os.WriteFile(filepath.Join(runs, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(runs, ".hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := List(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.ID+":"+e.Status())
	}
	if want := "no-manifest:unknown c:completed b:completed a:completed"; strings.Join(got, " ") != want {
		t.Errorf("List = %v, want %s", got, want)
	}
	if !errors.Is(list[0].Err, ErrNoManifest) {
		t.Errorf("entry without manifest: Err %v", list[0].Err)
	}
	if _, err := List(filepath.Join(runs, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of a missing dir: %v", err)
	}
}

func TestFinalizeKilled(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteManifest(&Manifest{RunID: "r1", Status: StatusRunning, Created: 1}); err != nil {
		t.Fatal(err)
	}
	// A kill tore the last record.
	if err := os.WriteFile(r.Path(RequestsFile+PartialSuffix), []byte("{\"i\":0}\n{\"i\":1}\n{\"i\":"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.Path(EngineMetricsFile+PartialSuffix), []byte("{\"x\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	end := time.Unix(100, 500e6)
	m, err := r.FinalizeKilled("bench process gone", end)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusKilled || m.Error != "bench process gone" || m.Ended != 100.5 {
		t.Errorf("manifest %+v", m)
	}
	data, err := os.ReadFile(r.Path(RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "{\"i\":0}\n{\"i\":1}\n" {
		t.Errorf("requests.jsonl = %q, want the two complete lines", data)
	}
	assertFiles(t, r.Dir, EngineMetricsFile, ManifestFile, RequestsFile)
	back, err := r.ReadManifest()
	if err != nil || back.Status != StatusKilled {
		t.Fatalf("manifest on disk: %+v, %v", back, err)
	}
	if _, err := r.FinalizeKilled("again", end); !errors.Is(err, ErrFinal) {
		t.Fatalf("second FinalizeKilled: %v, want ErrFinal", err)
	}
}

func TestFinalizeNeverReplacesAFinalFile(t *testing.T) {
	r, err := Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteManifest(&Manifest{RunID: "r1", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{RequestsFile: "final\n", RequestsFile + PartialSuffix: "partial\n"} {
		if err := os.WriteFile(r.Path(name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.FinalizeKilled("x", time.Now()); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("FinalizeKilled over a final requests.jsonl: %v, want ErrExist", err)
	}
	if data, _ := os.ReadFile(r.Path(RequestsFile)); string(data) != "final\n" {
		t.Errorf("requests.jsonl replaced: %q", data)
	}
	if m, _ := r.ReadManifest(); m.Status != StatusRunning {
		t.Errorf("status %s after a failed finalize, want running", m.Status)
	}
	if err := r.Finalize(&Manifest{RunID: "r1", Status: StatusRunning}); err == nil {
		t.Error("Finalize with status running succeeded")
	}
}

func TestTruncateToLastLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"no newline", ""},
		{"a\n", "a\n"},
		{"a\nb", "a\n"},
		{"a\nb\n", "a\nb\n"},
		{"x\n" + strings.Repeat("y", 200<<10), "x\n"}, // last newline more than one chunk back
	} {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := truncateToLastLine(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got, _ := os.ReadFile(p); string(got) != c.want {
			t.Errorf("truncate(%.20q) = %.20q, want %.20q", c.in, got, c.want)
		}
	}
}

// assertFiles checks that dir holds exactly names (no temporary or partial
// files left).
func assertFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}
