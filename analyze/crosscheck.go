package analyze

import (
	"fmt"
	"math"
	"strconv"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// requestTally sums what the per-request samples and the archive must
// agree on.
type requestTally struct {
	formal, succeeded, warmup int
	output, input             int64
}

func (t *requestTally) add(formal, success bool, output, input int32) {
	if !formal {
		t.warmup++
		return
	}
	t.formal++
	if success {
		t.succeeded++
		t.output += int64(output)
		t.input += int64(input)
	}
}

func (t requestTally) String() string {
	return fmt.Sprintf("%d formal requests (%d successful, %d output and %d input tokens) and %d warm-up",
		t.formal, t.succeeded, t.output, t.input, t.warmup)
}

// tallyOf sums the loaded requests.
func tallyOf(reqs []Request) requestTally {
	var t requestTally
	for i := range reqs {
		t.add(reqs[i].Formal, reqs[i].Success, reqs[i].OutputTokens, reqs[i].InputTokens)
	}
	return t
}

// crossCheck compares the requests Prometheus holds with the archive's
// (every archived request was pushed as samples): when they disagree (a
// remote-write receiver that acknowledged batches it dropped, samples
// lost to an outage) the requests come from the archive, and
// d.RequestsFromArchive says what Prometheus held.
//
// Prometheus holding more formal requests than the archive is no loss: the
// requests stay Prometheus', and d.RequestsFromArchive says the archive
// does not account for them.
func (a *BenchArchive) crossCheck(d *RunData) error {
	prom := tallyOf(d.Requests)
	switch {
	case prom == a.tally:
		return nil
	case prom.formal > a.tally.formal:
		d.ArchiveMismatch = fmt.Sprintf("Prometheus holds %s, the run archive only %s", prom, a.tally)
		return nil
	}
	var reqs []Request
	var slots []string // reqs' slot labels, ranked once all are read
	incomplete := 0
	err := a.run.EachRequest(func(_ int, r *runarchive.Request) error {
		if x, ok := archivedRequest(r); ok {
			reqs, slots = append(reqs, x), append(slots, strconv.Itoa(r.Slot))
		} else {
			incomplete++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("re-reading the archive's requests: %w", err)
	}
	ranks := SlotRanks(slots)
	for i := range reqs {
		reqs[i].SlotRank = ranks[slots[i]]
	}
	d.Requests, d.IncompleteRequests = reqs, incomplete
	d.RequestsFromArchive = fmt.Sprintf("Prometheus held %s, the run archive %s", prom, a.tally)
	return nil
}

// archivedRequest is r as the per-request samples carry it, its SlotRank
// unset; false when a count or a time cannot be (negative, absurd, not
// finite).
func archivedRequest(r *runarchive.Request) (Request, bool) {
	out, okOut := tokenCount(float64(r.OutputTokens))
	in, okIn := tokenCount(float64(r.InputTokens))
	if !okOut || !okIn || !plausibleDuration(r.LatencySeconds) || !plausibleDuration(r.EndTime) {
		return Request{}, false
	}
	x := Request{Formal: r.Phase == string(contract.Formal), End: r.EndTime, Latency: r.LatencySeconds,
		Send: r.EndTime - r.LatencySeconds, OutputTokens: int32(out), InputTokens: int32(in), Success: r.Success}
	if t := r.TTFTSeconds; r.Success && t != nil && plausibleDuration(*t) {
		x.HasTTFT, x.TTFT = true, *t
	}
	return x, true
}

// clampInterrupted ends the formal phase of a killed or aborted run (the
// archive's status) at its last formal request: a bench that died left the
// exporter's formal phase open until runs finalize, and its load stopped
// at the last request. The exporter's formal phase energy then covers the
// wrong span and is dropped (the counter covers the clamped one).
func (a *BenchArchive) clampInterrupted(d *RunData) {
	if a.manifest == nil || (a.manifest.Status != runarchive.StatusKilled && a.manifest.Status != runarchive.StatusAborted) {
		return
	}
	d.Interrupted = &Interruption{Status: a.manifest.Status}
	last := math.Inf(-1)
	for i := range d.Requests {
		if d.Requests[i].Formal {
			last = max(last, d.Requests[i].End)
		}
	}
	b := d.Phases[string(contract.Formal)]
	if !b.HasStart || math.IsInf(last, 0) || last < b.Start || (b.HasEnd && b.End <= last) {
		return
	}
	if b.HasEnd {
		d.Interrupted.CutSeconds = b.End - last
	}
	b.End, b.HasEnd = last, true
	d.Phases[string(contract.Formal)] = b
	delete(d.PhaseEnergy, string(contract.Formal))
}
