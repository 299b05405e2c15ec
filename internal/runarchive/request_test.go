package runarchive

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// fullRequest sets every field of Request, so a field the writer or the
// reader drops fails the round trip.
func fullRequest(i int) *Request {
	return &Request{
		Phase: string(contract.Formal), Slot: i, SendTime: 1700000000.125, FirstTokenTime: new(1700000000.25),
		EndTime: 1700000001.5, TTFTSeconds: new(0.125), LatencySeconds: 1.375, TPOTSeconds: new(0.0125),
		OutputTokens: 100, InputTokens: 550, TokensSource: TokensUsage, Success: i%2 == 0, Error: "cut",
		FinishReason: "length", ITLSeconds: []float64{0.01, 0.015}, Index: i, ErrorClass: "timeout",
		StatusCode: 503, Model: "m", ScheduledTime: new(1700000000.0), Chunks: 101, ReasoningTokens: 7,
		OutputChars: new(400), ReasoningChars: 30, OutputHash: "ab12", MaxTokens: 100, RetryAfterSeconds: 2.5,
		Quality: &QualityResult{Pass: false, Failed: []string{"regex"}, Mismatches: 1},
	}
}

// TestArchiveRoundTrip: a manifest, the requests and phases.json written
// by the writers read back equal through the readers.
func TestArchiveRoundTrip(t *testing.T) {
	r, err := Create(t.TempDir(), "rt-1")
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{RunID: "rt-1", Status: StatusCompleted, Flags: []string{"f"}, ConfigSHA256: "c",
		Config:    map[string]any{"workload": map[string]any{"kind": "correctness"}, "extras": map[string]any{"ignore_eos": false}},
		Joulemark: JoulemarkInfo{Version: "v"}, Host: HostInfo{CPUs: 2}, Engine: EngineInfo{Model: "m", Controller: "none"},
		GPUs: map[string][]phaseapi.GPUInfo{"http://a:9400": {{UUID: "GPU-0"}}},
		Load: LoadInfo{Mode: "closed", Concurrency: 4}, Created: 1.5, Ended: 2.5, Phases: map[string]float64{"formal": 2},
		Summary: &Summary{Started: 3, Errors: map[string]int{"timeout": 1}, TTFT: Percentiles{N: 3}},
		RunInfo: &contract.RunIdentity{Mode: "closed"}, SamplesAt: 2.25}
	if err := r.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	ph := &Phases{RunID: "rt-1", Exporters: []ExporterStatus{
		{URL: "http://a:9400", Status: &phaseapi.RunStatus{RunID: "rt-1", State: "ended", CoTenants: []string{"ns/p"},
			Phases: []phaseapi.PhaseStatus{{Phase: contract.Formal, Start: 1, End: new(2.0), EnergyJoules: 5}}}},
		{URL: "http://b:9400", Error: "connection refused"},
	}}
	if err := r.WritePhases(ph); err != nil {
		t.Fatal(err)
	}
	w, err := r.CreateRequests()
	if err != nil {
		t.Fatal(err)
	}
	var want []*Request
	for i := range 3 {
		want = append(want, fullRequest(i))
		w.Append(want[i])
	}
	if err := r.EachRequest(func(int, *Request) error { return nil }); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("EachRequest while writing: %v, want ErrIncomplete", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	gotM, err := r.ReadManifest()
	if err != nil || !reflect.DeepEqual(gotM, m) {
		t.Errorf("manifest read back %+v, %v; want %+v", gotM, err, m)
	}
	if gotM.WorkloadKind() != "correctness" || gotM.IgnoreEOS() == nil || *gotM.IgnoreEOS() {
		t.Errorf("WorkloadKind %q, IgnoreEOS %v", gotM.WorkloadKind(), gotM.IgnoreEOS())
	}
	gotP, err := r.ReadPhases()
	if err != nil || !reflect.DeepEqual(gotP, ph) {
		t.Errorf("phases read back %+v, %v; want %+v", gotP, err, ph)
	}
	var got []*Request
	var lines []int
	if err := r.EachRequest(func(line int, req *Request) error {
		got, lines = append(got, req), append(lines, line)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(lines, []int{1, 2, 3}) {
		t.Errorf("requests read back %+v at lines %v; want %+v", got, lines, want)
	}
	if (&Manifest{}).WorkloadKind() != "" {
		t.Error("WorkloadKind without config is not empty")
	}
}

func TestReadPhasesErrors(t *testing.T) {
	r, err := Create(t.TempDir(), "p-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadPhases(); !errors.Is(err, ErrNoPhases) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPhases without the file: %v", err)
	}
	if err := r.WriteFile(PhasesFile, []byte("{\n\"exporters\": 3}")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadPhases(); err == nil || !strings.Contains(err.Error(), PhasesFile+": line 2") {
		t.Errorf("ReadPhases of a bad file: %v, want the file and line", err)
	}
}

// TestDecodeRequestsStrict: a line that is not one Request is an error
// naming the file and line; blank lines are skipped; fn's error stops the
// reading as it is.
func TestDecodeRequestsStrict(t *testing.T) {
	good := `{"phase":"formal","slot":1}`
	for _, tc := range []struct {
		name, text, want string
		n                int
	}{
		{"two lines and a blank", good + "\n\n" + good + "\n", "", 2},
		{"no final newline", good + "\n" + good, "", 2},
		{"cut line", good + "\n" + `{"phase":"for`, "f.jsonl: line 2: unexpected end", 1},
		{"null", good + "\nnull\n", "f.jsonl: line 2: not a JSON object", 1},
		{"array", "[1]\n", "f.jsonl: line 1: not a JSON object", 0},
		{"two objects on a line", good + good + "\n", "f.jsonl: line 1: invalid character '{' after top-level value", 0},
		{"wrong type", `{"slot":"one"}` + "\n", "f.jsonl: line 1: json: cannot unmarshal string", 0},
		{"number out of range", `{"send_time":1e400}` + "\n", "f.jsonl: line 1:", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := DecodeRequests(strings.NewReader(tc.text), "f.jsonl", func(int, *Request) error { n++; return nil })
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if n != tc.n {
				t.Errorf("%d requests before the error, want %d", n, tc.n)
			}
		})
	}
	stop := errors.New("stop")
	n := 0
	err := DecodeRequests(strings.NewReader(good+"\n"+good+"\n"), "f", func(int, *Request) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("fn's error: %v after %d, want it as is after 1", err, n)
	}
}

// TestEachRequestAfterKill: a killed run's requests.jsonl.partial, cut in
// its last line, is refused as incomplete; once finalized, the complete
// lines read and the cut one is gone.
func TestEachRequestAfterKill(t *testing.T) {
	r, err := Create(t.TempDir(), "k-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteManifest(&Manifest{RunID: "k-1", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(fullRequest(0))
	if err != nil {
		t.Fatal(err)
	}
	data := append(append(b, '\n'), b[:len(b)/2]...)
	if err := os.WriteFile(r.Path(RequestsFile+PartialSuffix), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.EachRequest(func(int, *Request) error { return nil }); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("EachRequest of a partial run: %v, want ErrIncomplete", err)
	}
	if _, err := r.FinalizeKilled("test", time.Unix(10, 0)); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := r.EachRequest(func(int, *Request) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("after finalize: %d requests, %v; want the 1 complete line", n, err)
	}
}

// FuzzDecodeRequests: no line panics the reader; a line it accepts
// re-encodes to a line that reads back and encodes the same.
func FuzzDecodeRequests(f *testing.F) {
	b, _ := json.Marshal(fullRequest(1))
	for _, s := range []string{string(b), string(b[:40]), "null", "{}", "\n\n", `{"itl_seconds":[1,"x"]}`,
		`{"quality":{"failed_rules":null}}`, `{"output_chars":null,"ttft_seconds":-0}`, "{\"phase\":\"\\ud800\"}", "\xff{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		last := 0
		_ = DecodeRequests(strings.NewReader(text), "fuzz", func(line int, r *Request) error {
			if r == nil || line <= last {
				t.Fatalf("line %d after %d, request %v", line, last, r)
			}
			last = line
			checkLine(t, r)
			enc, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", r, err)
			}
			var back Request
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatalf("%s does not read back: %v", enc, err)
			}
			if again, err := json.Marshal(&back); err != nil || string(again) != string(enc) {
				t.Fatalf("%s read back as %s, %v", enc, again, err)
			}
			return nil
		})
	})
}
