package analyze

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
)

// TestNaNFromPrometheus: NaN in a request's input tokens or success makes
// its sample group incomplete (never a wrapped count), NaN in a phase
// energy is left out and flagged; the report still encodes.
func TestNaNFromPrometheus(t *testing.T) {
	s := startPromserver(t)
	samples := fixtureSamples(fixture())
	at := int64(fixtureBase+100) * 1000
	var inputs, succs, energies int
	for i, x := range samples {
		switch n := x.Labels["__name__"]; {
		case n == contract.RequestInputTokens && x.TimestampMs == at:
			samples[i].Value, inputs = math.NaN(), inputs+1
		case n == contract.RequestSuccess && x.TimestampMs == at+1000:
			samples[i].Value, succs = math.NaN(), succs+1
		case n == contract.PhaseEnergy && x.Labels["phase"] == "formal":
			samples[i].Value, energies = math.NaN(), energies+1
		}
	}
	if inputs == 0 || succs == 0 || energies == 0 {
		t.Fatalf("fixture edits: %d input, %d success, %d energy samples", inputs, succs, energies)
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL()) // fails when report.json cannot encode
	flags := flagCodes(r)
	for _, f := range []string{contract.FlagRequestsIncomplete, contract.FlagPrometheusValuesInvalid} {
		if !slices.Contains(flags, f) {
			t.Errorf("flags %v, want %s", flags, f)
		}
	}
	if r.Valid {
		t.Error("a report built on NaN answers is valid")
	}
	if r.Tokens.FormalInput < 0 || r.Requests.Started != 99 {
		t.Errorf("formal input tokens %d over %d requests: want no wrapped NaN, 99 of the 101 requests (2 left out)", r.Tokens.FormalInput, r.Requests.Started)
	}
}

func TestTokenCount(t *testing.T) {
	for v, ok := range map[float64]bool{0: true, 7: true, 1 << 24: true, -1: false, 2.5: false, 1 << 25: false, math.NaN(): false, math.Inf(1): false} {
		if n, got := tokenCount(v); got != ok || (ok && float64(n) != v) {
			t.Errorf("tokenCount(%v) = %d, %v", v, n, got)
		}
	}
	if _, ok := successValue(math.NaN()); ok {
		t.Error("a NaN success is taken")
	}
}
