package analyze

import (
	"maps"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// computeAllocs is what one Compute of a synthetic run of n requests (8
// GPUs at 10 Hz, 100 requests a second) allocates: bytes and objects.
func computeAllocs(t *testing.T, n int) (bytes, objects float64) {
	t.Helper()
	d := synthRun(n, 8, float64(n)/100, 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, _, err := computeSeries(d, DefaultParams())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests.Started != n {
		t.Fatalf("%d requests computed, want %d", r.Requests.Started, n)
	}
	return float64(after.TotalAlloc - before.TotalAlloc), float64(after.Mallocs - before.Mallocs)
}

// Compute's allocation budget: what one Compute of a synthetic
// run of budgetRequests requests allocates per request, its 8 GPUs' 10 Hz
// samples included (BenchmarkCompute1M measures the same at 1M requests:
// 250 bytes a request); time is not tested (docs/analyze.md, "Scale
// (measured)").
const (
	// budgetBytesPerRequest: measured 264 (271 before the latency
	// percentiles were read from the intervals' sorted lists; 280 before
	// the attribution walked the ends in completion order and the fit
	// united its spans without a sort; 305 before the steady-state CVs
	// walked running sums instead of prefix arrays; 437 before the
	// latency thresholds and the drain's latencies were sized once; 862
	// before the prefill/decode fit read the requests in place).
	budgetBytesPerRequest = 280
	// budgetAllocsPerRequest: measured 0.0114, 1,144 objects (0.0111
	// before the interval series were built beside the attribution; 0.0098
	// before; 0.76 when the fit's bootstrap allocated a matrix per block
	// and resample); an allocation per request or per sample in a hot
	// path adds 1.
	budgetAllocsPerRequest = 0.02
	budgetRequests         = 100_000
)

// TestComputeAllocationBudget fails when Compute allocates more bytes or
// objects per request than its budget: a regression in memory (the
// prefill/decode fit once added 260 MB at 1M requests unnoticed) shows
// here, in CI, without a timing.
func TestComputeAllocationBudget(t *testing.T) {
	computeAllocs(t, 1000) // one-time allocations
	b, o := computeAllocs(t, budgetRequests)
	bytes, objects := b/budgetRequests, o/budgetRequests
	t.Logf("Compute of %d requests: %.0f bytes and %.4f objects per request (%.1f MB, %.0f objects)", budgetRequests, bytes, objects, b/(1<<20), o)
	if bytes > budgetBytesPerRequest {
		t.Errorf("Compute allocates %.0f bytes per request, budget %d", bytes, budgetBytesPerRequest)
	}
	if objects > budgetAllocsPerRequest {
		t.Errorf("Compute makes %.4f allocations per request, budget %g", objects, budgetAllocsPerRequest)
	}
}

// TestRequestSize holds the per-request values to their size and Request
// free of pointers (the collector would scan a million of them): a million
// requests are held through the whole analysis (Request) and, while the
// loader joins its windows, beside their per-window parts (reqVals).
func TestRequestSize(t *testing.T) {
	if s := unsafe.Sizeof(Request{}); s > 48 {
		t.Errorf("Request is %d bytes, budget 48", s)
	}
	if hasPointers(reflect.TypeFor[Request]()) {
		t.Error("Request holds a pointer: the collector scans a million of them at each cycle")
	}
	if s := unsafe.Sizeof(reqVals{}); s > 40 {
		t.Errorf("reqVals is %d bytes, budget 40", s)
	}
}

// hasPointers reports whether values of t hold a pointer (its fields are
// plain numbers and booleans otherwise).
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for f := range t.Fields() {
			if hasPointers(f.Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}

// TestSlotRanks: ranks in the labels' string order, as the slot label
// ordered requests before it became a rank.
func TestSlotRanks(t *testing.T) {
	got := SlotRanks([]string{"9", "10", "2", "10", ""})
	want := map[string]int32{"": 0, "10": 1, "2": 2, "9": 3}
	if !maps.Equal(got, want) {
		t.Errorf("SlotRanks = %v, want %v", got, want)
	}
}
