package benchjob

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// traceEntry is one request of a replayed trace.
type traceEntry struct {
	At           time.Duration // since the start of the formal phase
	InputTokens  int
	OutputTokens int
}

// traceLine accepts two spellings per line of JSONL:
// {"time": seconds, "input_tokens": N, "output_tokens": N} and the Mooncake
// form {"timestamp": milliseconds, "input_length": N, "output_length": N}.
type traceLine struct {
	Time         *float64 `json:"time"`
	Timestamp    *float64 `json:"timestamp"`
	InputTokens  *int     `json:"input_tokens"`
	OutputTokens *int     `json:"output_tokens"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
}

// MaxTraceSpan bounds a trace's arrivals after its first (a time.Duration
// holds 292 years; a day-long replay is the longest anyone measures).
const MaxTraceSpan = 30 * 24 * time.Hour

// loadTrace reads a trace file; arrival times are made relative to the first
// one and must not go backwards.
func loadTrace(path string) ([]traceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), MaxTraceLine)
	var out []traceEntry
	var first, prev float64
	n := 0
	for sc.Scan() {
		n++
		l := sc.Bytes()
		if n == 1 {
			l = bytes.TrimPrefix(l, utf8BOM)
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		where := fmt.Sprintf("trace %s: line %d", path, n)
		var t traceLine
		if err := json.Unmarshal(l, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		var at float64
		switch {
		case t.Time != nil:
			at = *t.Time
		case t.Timestamp != nil:
			at = *t.Timestamp / 1000
		default:
			return nil, fmt.Errorf("%s: no arrival time (want \"time\" in seconds or \"timestamp\" in ms)", where)
		}
		if math.IsNaN(at) || math.IsInf(at, 0) {
			return nil, fmt.Errorf("%s: arrival time %g is not a finite number", where, at)
		}
		in, out1 := t.InputTokens, t.OutputTokens
		if in == nil {
			in = t.InputLength
		}
		if out1 == nil {
			out1 = t.OutputLength
		}
		if in == nil || out1 == nil || *in <= 0 || *out1 <= 0 || *in > contract.MaxRequestTokens || *out1 > contract.MaxRequestTokens {
			return nil, fmt.Errorf("%s: want input_tokens and output_tokens (or input_length, output_length) from 1 to %d", where, contract.MaxRequestTokens)
		}
		if len(out) == 0 {
			first, prev = at, at
		}
		if at < prev {
			return nil, fmt.Errorf("%s: arrival %g goes back before %g", where, at, prev)
		}
		if at-first > MaxTraceSpan.Seconds() {
			return nil, fmt.Errorf("%s: arrival %g s after the first: a trace spans at most %s", where, at-first, MaxTraceSpan)
		}
		prev = at
		out = append(out, traceEntry{At: time.Duration((at - first) * float64(time.Second)), InputTokens: *in, OutputTokens: *out1})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace %s: line %d: %w", path, n+1, lineErr(err, MaxTraceLine))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("trace %s: no entries", path)
	}
	return out, nil
}
