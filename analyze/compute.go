package analyze

import (
	"cmp"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"

	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Params are the definitions' knobs (docs/design.md, "Definitions").
// Their kong tags make them joulemark analyze run's flags, whose defaults
// are DefaultParams' (kong:"-": no flag; the enum's default tag is kong's
// rule for an enum, contract.SteadyWeightTokens as DefaultParams has it).
type Params struct {
	SLOTTFT   time.Duration `name:"slo.ttft" help:"TTFT SLO for goodput (0 disables)."`                             // 0: no TTFT SLO
	SLOTPOT   time.Duration `name:"slo.tpot" help:"TPOT SLO for goodput (0 disables)."`                             // 0: no TPOT SLO
	SSWindow  int           `name:"steady-state.window" help:"Steady state: requests per window."`                  // requests per window (100)
	SSWindows int           `name:"steady-state.windows" help:"Steady state: consecutive non-overlapping windows."` // consecutive windows (3)
	SSCV      float64       `name:"steady-state.cv" help:"Steady state: CV threshold of every window."`             // CV threshold (0.03)
	// SSWeighting weighs a request in a window's CV: contract.SteadyWeightTokens
	// (its output tokens, the default) or contract.SteadyWeightRequests (alike).
	SSWeighting string `name:"steady-state.weighting" enum:"tokens,requests" default:"tokens" help:"Steady state: how a request counts in a window's CV: by its output tokens (tokens), as in the J/token figure, or alike (requests, where a short request's attribution noise weighs as much as a long one)."`

	MaxErrorRate    float64 `name:"max-error-rate" help:"Formal error rate above which the run is invalid."`                                                 // formal error rate above which the run is flagged (0.05)
	MinCoverage     float64 `name:"min-coverage" help:"Sample coverage below which the run is invalid."`                                                     // sample coverage below which the run is flagged (0.95)
	EnergyTolerance float64 `name:"energy-tolerance" help:"Relative disagreement between counter and exporter stage energy above which the run is invalid."` // relative disagreement of the two stage energies flagged (0.01)
	IdleMaxCV       float64 `kong:"-"`                                                                                                                       // per-GPU idle power CV above which idle is unstable (0.05)
	// MaxBadOutputRatio: share of empty, repeated or short outputs above
	// which the run is flagged outputs_suspect (0.05); used only when the
	// bench archive is given (Config.Archive).
	MaxBadOutputRatio float64 `name:"max-bad-output-ratio" help:"With a run archive: share of empty, repeated or short outputs above which the run is flagged outputs_suspect (a warning)."`
	// MinQuality: pass rate of the checked answers (correctness workload,
	// quality_file) under which the run is flagged quality_low and excluded
	// (0.95); used only when the bench archive holds quality verdicts.
	MinQuality float64 `name:"min-quality" help:"With quality verdicts in the archive (workload.kind correctness, workload.quality_file): pass rate under which the run is flagged quality_low and excluded."`
}

// DefaultParams are the documented defaults.
func DefaultParams() Params {
	return Params{
		SLOTTFT: 500 * time.Millisecond, SLOTPOT: 50 * time.Millisecond,
		SSWindow: contract.SteadyStateWindow, SSWindows: contract.SteadyStateWindows,
		SSCV: contract.SteadyStateCV, SSWeighting: contract.SteadyWeightTokens,
		MaxErrorRate: 0.05, MinCoverage: 0.95, EnergyTolerance: 0.01, IdleMaxCV: 0.05,
		MaxBadOutputRatio: 0.05, MinQuality: 0.95,
	}
}

// Validate checks the parameters before any work starts.
func (p Params) Validate() error {
	switch {
	case p.SLOTTFT < 0 || p.SLOTPOT < 0:
		return fmt.Errorf("SLOs must not be negative (ttft %v, tpot %v)", p.SLOTTFT, p.SLOTPOT)
	case p.SSWindow < 2:
		return fmt.Errorf("steady-state window must hold at least 2 requests, got %d", p.SSWindow)
	case p.SSWindows < 1:
		return fmt.Errorf("steady-state window count must be at least 1, got %d", p.SSWindows)
	case !(p.SSCV > 0):
		return fmt.Errorf("steady-state CV threshold must be > 0, got %g", p.SSCV)
	case p.SSWeighting != contract.SteadyWeightTokens && p.SSWeighting != contract.SteadyWeightRequests:
		return fmt.Errorf("steady-state weighting %q: want %q or %q", p.SSWeighting, contract.SteadyWeightTokens, contract.SteadyWeightRequests)
	case p.MaxErrorRate < 0 || p.MaxErrorRate > 1:
		return fmt.Errorf("max error rate must be in [0,1], got %g", p.MaxErrorRate)
	case p.MinCoverage < 0 || p.MinCoverage > 1:
		return fmt.Errorf("min coverage must be in [0,1], got %g", p.MinCoverage)
	case p.MaxBadOutputRatio < 0 || p.MaxBadOutputRatio > 1:
		return fmt.Errorf("max bad output ratio must be in [0,1], got %g", p.MaxBadOutputRatio)
	case p.MinQuality < 0 || p.MinQuality > 1:
		return fmt.Errorf("min quality must be in [0,1], got %g", p.MinQuality)
	case p.EnergyTolerance <= 0:
		return fmt.Errorf("energy tolerance must be > 0, got %g", p.EnergyTolerance)
	}
	return nil
}

// phaseOrderSlack is how far apart the exporters of one run may stamp the
// same boundary (each stamps its own clock) before phases count as out of
// order.
const phaseOrderSlack = 1.0

// PlotData is what the HTML report plots besides the report itself.
type PlotData struct {
	Power          []PowerSeries
	Phases         []PhaseBand
	JoulesPerToken []float64 // successful formal requests in completion order
	SteadyFirst    int       // index into JoulesPerToken, -1 when not reached
	SteadyLast     int       // index of the steady state's last request
	TTFT, TPOT     []float64 // seconds, successful formal requests
	// SteadyJoulesPerToken is the steady-state level (NaN when not reached);
	// the SLOs are drawn on the histograms (0: none).
	SteadyJoulesPerToken           float64
	TTFTSLOSeconds, TPOTSLOSeconds float64
}

// PowerSeries is one GPU's power samples.
type PowerSeries struct {
	Label string
	T, W  []float64
}

// PhaseBand is one phase's span.
type PhaseBand struct {
	Name       string
	Start, End float64
}

// maxRequests is the most requests Compute takes: it indexes them with
// 32-bit integers (the attribution's events with 30 bits).
const maxRequests = maxEventReqs

// Compute derives the whole report from what one analysis read: the
// sections of the run's series, what the bench archive adds (output
// sanity, the exporters' gaps and release basis, answer quality, the run
// identity when Prometheus had none), the scenario, and the cost and
// carbon from cost and in.Carbon. It reads nothing and writes nothing.
// It never fails on data quality: what cannot be computed is null and
// flagged; the error is for misuse (invalid parameters, no data at all).
func Compute(in Input, p Params, cost report.CostInputs) (*report.Report, *PlotData, error) {
	r, pd, err := computeSeries(in.Run, p)
	if err != nil {
		return nil, nil, err
	}
	if in.Archive != nil {
		addArchive(r, in.Archive, p)
	}
	if r.Run != nil && r.Run.Scenario == "" {
		r.Run.Scenario = in.Scenario
	}
	r.Scenario = in.Scenario
	if r.Scenario == "" && r.Run != nil {
		r.Scenario = r.Run.Scenario
	}
	r.GeneratedBy = in.GeneratedBy
	addCost(r, cost, in.Carbon)
	return r, pd, nil
}

// computeSeries derives the report's sections from the run's series.
func computeSeries(d *RunData, p Params) (*report.Report, *PlotData, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if n := len(d.Requests); n > maxRequests {
		return nil, nil, fmt.Errorf("run %q has %d requests, more than the %d one analysis takes", d.RunID, n, maxRequests)
	}
	c := &computation{
		d:  d,
		p:  p,
		r:  &report.Report{RunID: d.RunID, Stages: map[string]report.Stage{}, Flags: []report.Flag{}},
		pd: &PlotData{SteadyFirst: -1, SteadyJoulesPerToken: math.NaN()},

		steadyFrom: -1,
	}
	c.decideMode()
	if err := c.span(); err != nil {
		return nil, nil, err
	}
	c.oneLifecycle()
	c.counterCurves()
	// Sections that read only the requests, the curves and the phases
	// (which nothing changes) and write only their own part run on
	// goroutines of their own from the moment their inputs are there;
	// whoever needs their result waits for it. The attribution, the
	// longest, runs beside the sections up to steadyState; the
	// prefill/decode fit beside everything up to the extras.
	c.startAttribution()
	fit := c.start(c.prefillDecode)
	c.measurement()
	c.stages()
	c.release()
	c.idleStability()
	c.orderFormal()
	// The latency percentiles and their intervals need only the formal
	// order, and so do most interval series.
	c.startLatencyIntervals()
	c.requests()
	c.startIntervalBase()
	c.goodput()
	c.throughput()
	c.steadyState()
	c.lifecycleEstimate()
	// The intervals write only their own section: they run beside the
	// extras, which read what they read and write other sections.
	intervals := c.start(c.intervals)
	c.extras()
	<-fit
	<-intervals
	// The diagnosis reads the latency percentiles, which come with their
	// intervals.
	c.diagnose()
	c.powerPlot()
	c.validity()
	return c.r, c.pd, nil
}

// computation is one Compute call: the inputs, the report and plot data
// being filled in, and what one report section derives for the next ones.
// Each method fills one section, in the order Compute calls them.
type computation struct {
	d  *RunData
	p  Params
	r  *report.Report
	pd *PlotData

	spanFrom, spanTo float64            // first phase start, last phase end
	interval         float64            // median energy sample interval; NaN when unknown
	curves           []curve            // one per d.GPUs
	formal           []int32            // indexes into d.Requests of formal requests, in completion order
	attr             <-chan attribution // the attribution to requests (startAttribution); nil when there is none
	latency          <-chan latencyPart // the latency percentiles and their intervals (startLatencyIntervals); nil without formal requests
	ivBase           <-chan *ivSeries   // the interval series that need no attribution (startIntervalBase); nil without formal requests
	goodTokens       int64              // output tokens of requests within the SLOs
	joules           []float64          // the attribution's joules per request (index into d.Requests); nil without one
	steadyFrom       int                // position in the steady sequence (successful formal requests with tokens) where the steady state starts; -1 when not reached
}

// start runs section on a goroutine of its own; the channel closes when
// it returns.
func (c *computation) start(section func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { section(); close(done) }()
	return done
}

// flag adds a report flag.
func (c *computation) flag(code string, excluding bool, format string, a ...any) {
	c.r.Flags = append(c.r.Flags, report.Flag{Code: code, Message: fmt.Sprintf(format, a...), Excluding: excluding})
}

// complete reports whether the phase has both boundaries in order.
func (c *computation) complete(name string) (PhaseBounds, bool) {
	b, ok := c.d.Phases[name]
	return b, ok && b.HasStart && b.HasEnd && b.End >= b.Start
}

// span finds the run span (first phase start to last phase end) and the
// phase bands; it fails when no phase is complete.
func (c *computation) span() error {
	c.spanFrom, c.spanTo = math.Inf(1), math.Inf(-1)
	var missing []string
	found := false
	for _, ph := range contract.Phases {
		name := string(ph)
		b, ok := c.complete(name)
		if !ok {
			if slices.Contains(c.expectedPhases(), name) {
				missing = append(missing, name)
			}
			continue
		}
		found = true
		c.spanFrom, c.spanTo = min(c.spanFrom, b.Start), max(c.spanTo, b.End)
		c.pd.Phases = append(c.pd.Phases, PhaseBand{name, b.Start, b.End})
	}
	if !found {
		return fmt.Errorf("run %q has no complete phase (no start and end timestamps)", c.d.RunID)
	}
	if len(missing) > 0 {
		c.flag(contract.FlagPhaseMissing, true, "phases without both boundaries: %s", strings.Join(missing, ", "))
	}
	return nil
}

// oneLifecycle flags a run id that more than one lifecycle used: a phase
// whose start changed, or phases out of lifecycle order (a formal starting
// after a release ended, an idle after a formal).
func (c *computation) oneLifecycle() {
	var why []string
	if len(c.d.RestartedPhases) > 0 {
		why = append(why, "phases started more than once: "+strings.Join(c.d.RestartedPhases, ", "))
	}
	var prevName string
	var prev PhaseBounds
	for _, ph := range contract.Phases {
		name := string(ph)
		b, ok := c.d.Phases[name]
		if !ok || !b.HasStart {
			continue
		}
		if prevName != "" {
			switch {
			case b.Start+phaseOrderSlack < prev.Start:
				why = append(why, fmt.Sprintf("%s starts %.1f s before %s", name, prev.Start-b.Start, prevName))
			case prev.HasEnd && b.Start > prev.End+phaseOrderSlack:
				why = append(why, fmt.Sprintf("%s starts %.1f s after %s ended", name, b.Start-prev.End, prevName))
			}
		}
		prevName, prev = name, b
	}
	if len(why) > 0 {
		c.flag(contract.FlagRunIDReused, true, "more than one lifecycle under run id %s (the figures would mix runs): %s", c.d.RunID, strings.Join(why, "; "))
	}
}

// counterCurves builds each GPU's energy counter curve. The extrapolation
// tolerance is two sample intervals.
func (c *computation) counterCurves() {
	c.interval = math.NaN()
	gpus := c.d.GPUs
	medians := make([]float64, len(gpus))
	eachIndex(len(gpus), func(i int) { medians[i] = medianInterval(gpus[i].Energy) })
	var intervals []float64
	for _, m := range medians {
		if !math.IsNaN(m) {
			intervals = append(intervals, m)
		}
	}
	if len(intervals) > 0 {
		c.interval = stats.Median(intervals)
	}
	tol := 0.0
	if !math.IsNaN(c.interval) {
		tol = 2 * c.interval
	}
	c.curves = make([]curve, len(gpus))
	eachIndex(len(gpus), func(i int) { c.curves[i] = newCurve(gpus[i].Energy, tol) })
	if len(c.d.GPUs) == 0 {
		c.flag(contract.FlagNoEnergyData, true, "no GPU energy counter series for the run")
	}
}

// measurement fills the measurement section: boundary, sampling, energy
// sources and the samples' coverage of the run span.
func (c *computation) measurement() {
	m := &c.r.Measurement
	m.Boundary = report.Boundary
	m.SampleIntervalSeconds = stats.Finite(c.interval)
	m.GPUs = len(c.d.GPUs)
	m.GPUUUIDs = []string{}
	srcs := map[string]bool{}
	for _, g := range c.d.GPUs {
		m.GPUUUIDs = append(m.GPUUUIDs, g.UUID)
		if g.EnergySource != "" {
			srcs[g.EnergySource] = true
		}
		if g.EnergyScope == "module" {
			m.Boundary = report.BoundaryModule
		}
	}
	m.EnergySource = strings.Join(slices.Sorted(maps.Keys(srcs)), ",")
	m.FromArchive, m.WaitedSeconds = c.d.FromArchive, c.d.WaitedSeconds
	if len(c.d.GPUs) == 0 || !(c.spanTo > c.spanFrom) {
		return
	}
	cov := 1.0
	raw, scraped := 0, 0
	for _, g := range c.d.GPUs {
		for _, s := range []struct {
			name string
			ss   []Sample
			raw  bool
		}{{"energy", g.Energy, g.EnergyRaw}, {"power", g.Power, g.PowerRaw}} {
			if s.raw {
				raw++
			} else {
				scraped++
			}
			cv, gaps := coverage(s.ss, c.spanFrom, c.spanTo, medianInterval(s.ss))
			cov = min(cov, cv)
			for _, gp := range gaps {
				m.Gaps = append(m.Gaps, report.Gap{GPU: g.Label(), Series: s.name, Start: gp[0], End: gp[1]})
			}
		}
	}
	m.CoverageRatio = &cov
	switch {
	case scraped == 0:
		m.CoverageSeries = "raw"
	case raw == 0:
		m.CoverageSeries = "scraped"
	default:
		m.CoverageSeries = "mixed"
	}
	if cov < c.p.MinCoverage {
		c.flag(contract.FlagCoverageLow, true, "sample coverage %.3f is under %.3f (%d gaps)", cov, c.p.MinCoverage, len(m.Gaps))
	}
}

// stages fills each complete phase's stage energy, both ways (counter and
// exporter), and the energy section summing them.
func (c *computation) stages() {
	var disagree, restarted []string
	for _, ph := range contract.Phases {
		name := string(ph)
		b, ok := c.complete(name)
		if !ok {
			continue
		}
		st, msg := c.stage(name, b)
		switch {
		case msg != "" && c.restartedIn(b):
			restarted = append(restarted, msg)
		case msg != "":
			disagree = append(disagree, msg)
		}
		c.r.Stages[name] = st
	}
	if len(disagree) > 0 {
		c.flag(contract.FlagEnergySourcesDisagree, true, "counter and exporter stage energies differ by more than %g%%: %s", 100*c.p.EnergyTolerance, strings.Join(disagree, "; "))
	}
	if len(restarted) > 0 {
		c.flag(contract.FlagEnergySourcesDisagree, false, "counter and exporter stage energies differ by more than %g%% in stages holding an exporter restart, where the exporter's phase energy misses what it measured between its last save and the crash: %s", 100*c.p.EnergyTolerance, strings.Join(restarted, "; "))
	}
	stageE := func(name string) *float64 { return c.r.Stages[name].EnergyJoules }
	e := &c.r.Energy
	e.StartupJoules = sumPtr(stageE("startup"), stageE("warmup"))
	e.FormalJoules = stageE("formal")
	e.ReleaseJoules = stageE("release")
	e.LifecycleJoules = sumPtr(e.StartupJoules, e.FormalJoules, e.ReleaseJoules)
}

// stage computes one phase's stage; disagree describes the two energies'
// disagreement when it exceeds the tolerance, else it is empty.
// restartedIn reports whether an exporter of the run was down within b.
func (c *computation) restartedIn(b PhaseBounds) bool {
	for _, g := range c.d.ExporterRestarts {
		if g[0] < b.End && g[1] > b.Start {
			return true
		}
	}
	return false
}

func (c *computation) stage(name string, b PhaseBounds) (st report.Stage, disagree string) {
	st = report.Stage{Start: b.Start, End: b.End, DurationSeconds: b.End - b.Start}
	unc := 0.0 // how far sampling resolution alone can move the counter figure
	if len(c.curves) > 0 {
		sum, allOK := 0.0, true
		for i, cv := range c.curves {
			e, ok := cv.between(b.Start, b.End)
			sum += e
			allOK = allOK && ok
			stale := c.d.SamplerIntervalSeconds
			if c.d.GPUs[i].EnergyRaw {
				stale = 0 // the exporter's own sample timestamps
			}
			// A counter read up to stale seconds before its timestamp
			// shifts each boundary by up to that much of its power.
			unc += cv.uncertainty(b.Start) + cv.uncertainty(b.End) + stale*math.Max(cv.powerAt(b.Start), cv.powerAt(b.End))
		}
		if allOK {
			st.CounterEnergyJoules = new(sum)
		}
	}
	if e, ok := c.d.PhaseEnergy[name]; ok {
		st.ExporterEnergyJoules = new(e)
	}
	// The exporter's figure integrates its high-rate samples exactly
	// at the boundaries; the counter Prometheus holds is as fine as
	// its scrape (or raw-push) interval. The finer one is the stage
	// energy, the other the cross-check.
	st.EnergyJoules = st.ExporterEnergyJoules
	if st.EnergyJoules == nil {
		st.EnergyJoules = st.CounterEnergyJoules
	}
	if ce, ee := st.CounterEnergyJoules, st.ExporterEnergyJoules; ce != nil && ee != nil {
		if m := math.Max(math.Abs(*ce), math.Abs(*ee)); m > 0 {
			rel := math.Abs(*ce-*ee) / m
			st.EnergyDisagreementRatio = new(rel)
			// Sources disagree when they differ by more than the
			// tolerance AND more than the counter's sampling
			// resolution at the two boundaries can explain.
			if rel > c.p.EnergyTolerance && math.Abs(*ce-*ee) > unc {
				disagree = fmt.Sprintf("%s %.1f%% (counter %.1f J, exporter %.1f J, sampling resolution explains ±%.1f J)", name, 100*rel, *ce, *ee, unc)
			}
			if unc > 0 {
				st.CounterResolutionJoules = new(unc)
			}
		}
	}
	if st.EnergyJoules != nil && st.DurationSeconds > 0 {
		st.AvgPowerWatts = new(*st.EnergyJoules / st.DurationSeconds)
	}
	return st, disagree
}

// release fills the release section; an attached run has none to judge
// (not_measured names it).
func (c *computation) release() {
	if c.attached() {
		return
	}
	if rc := c.d.ReleaseClosed; rc != nil && *rc {
		c.r.Release.Closed = true
		c.r.Release.ClosedBy, c.r.Release.ClosedByAt = c.d.ReleaseClosedBy, c.d.ReleaseClosedAt
		return
	}
	why := "the exporter reported that power did not return to the idle baseline within the maximum wait"
	if c.d.ReleaseClosed == nil {
		why = "no joulemark_run_release_closed sample for the run"
	}
	c.flag(contract.FlagReleaseNotClosed, true, "release not closed: %s", why)
}

// idleStability flags GPUs whose idle power varies too much.
func (c *computation) idleStability() {
	b, ok := c.d.Phases["idle"]
	if !ok || !b.HasStart || !b.HasEnd {
		return
	}
	var unstable []string
	for _, g := range c.d.GPUs {
		var w []float64
		for _, s := range g.Power {
			if s.T >= b.Start && s.T < b.End {
				w = append(w, s.V)
			}
		}
		if len(w) < 2 {
			continue
		}
		if cv := windowCV(w, len(w))[0]; cv > c.p.IdleMaxCV {
			unstable = append(unstable, fmt.Sprintf("%s CV %.3f", g.Label(), cv))
		}
	}
	if len(unstable) > 0 {
		c.flag(contract.FlagIdleUnstable, false, "idle power varies more than CV %g: %s", c.p.IdleMaxCV, strings.Join(unstable, ", "))
	}
}

// interrupted flags a killed run (excluding: its bench died mid-run) or an
// aborted one (a warning), saying how much of the formal phase was cut.
func (c *computation) interrupted(in *Interruption) {
	cut := "the formal phase ends at its last request"
	if in.CutSeconds > 0 {
		cut = fmt.Sprintf("the formal phase ends at its last request, %.1f s before the recorded end (the exporter's formal phase energy is left out)", in.CutSeconds)
	}
	if in.Status == runarchive.StatusKilled {
		c.flag(contract.FlagKilled, true, "the bench died mid-run (finalized by joulemark runs finalize): %s", cut)
		return
	}
	c.flag(contract.FlagAborted, false, "the run was aborted (Ctrl-C): %s", cut)
}

// orderFormal lists the formal requests in completion order and flags the
// request samples and impossible values the loader left out.
func (c *computation) orderFormal() {
	if len(c.d.InvalidValues) > 0 {
		c.flag(contract.FlagPrometheusValuesInvalid, true, "Prometheus answered impossible values (NaN, ±Inf, a negative phase energy), left out: %s", strings.Join(c.d.InvalidValues, ", "))
	}
	if c.d.RequestsFromArchive != "" {
		c.flag(contract.FlagRequestsArchiveMismatch, false, "the per-request samples disagree with the run archive (a remote-write receiver dropped some?): %s; the requests come from the archive", c.d.RequestsFromArchive)
	}
	if in := c.d.Interrupted; in != nil {
		c.interrupted(in)
	}
	if c.d.ArchiveMismatch != "" {
		c.flag(contract.FlagRequestsArchiveMismatch, false, "the run archive does not account for every per-request sample (not this run's whole archive?): %s; the requests are Prometheus'", c.d.ArchiveMismatch)
	}
	if c.d.IncompleteRequests > 0 {
		c.flag(contract.FlagRequestsIncomplete, true, "%d per-request sample groups lack latency, output tokens or success and were left out", c.d.IncompleteRequests)
	}
	reqs := c.d.Requests
	n := 0
	for i := range reqs {
		if reqs[i].Formal {
			n++
		}
	}
	idx := make([]int32, 0, n)
	for i := range reqs {
		if reqs[i].Formal {
			idx = append(idx, int32(i))
		}
	}
	c.formal = sortFormal(reqs, idx)
}

// sortFormal orders the formal requests idx as cmpFormalReqs does: by
// end (radix over the keys read in request order, not the requests in
// sort order; no sort where the loader listed them by end already), then
// the runs of equal ends (rare) by send, slot and index.
func sortFormal(reqs []Request, idx []int32) []int32 {
	if !endsInOrder(reqs, idx) {
		radixByEnd(reqs, idx)
	}
	sortRuns(idx, func(i, j int32) bool { return cmp.Compare(reqs[i].End, reqs[j].End) == 0 },
		func(i, j int32) int { return cmpFormalReqs(reqs, i, j) })
	return idx
}

// endsInOrder says whether the requests idx are in cmp.Compare's order of
// their ends already (as the loader lists them).
func endsInOrder(reqs []Request, idx []int32) bool {
	for k := 1; k < len(idx); k++ {
		if cmp.Compare(reqs[idx[k]].End, reqs[idx[k-1]].End) < 0 {
			return false
		}
	}
	return true
}

// radixByEnd orders the requests idx by end, equal ends in no set order.
func radixByEnd(reqs []Request, idx []int32) {
	type keyed struct {
		key uint64
		i   int32
	}
	keys := make([]keyed, len(idx))
	for k, i := range idx {
		keys[k] = keyed{floatKey(reqs[i].End), i}
	}
	radixSortBy(keys, func(k keyed) uint64 { return k.key })
	for k := range keys {
		idx[k] = keys[k].i
	}
}

// cmpFormalReqs orders formal requests i and j of reqs by completion: end,
// then send, slot and index (a total order).
func cmpFormalReqs(reqs []Request, i, j int32) int {
	a, b := &reqs[i], &reqs[j]
	if c := cmp.Compare(a.End, b.End); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Send, b.Send); c != 0 {
		return c
	}
	if c := cmp.Compare(a.SlotRank, b.SlotRank); c != 0 {
		return c
	}
	return cmp.Compare(i, j)
}

// requests fills the request counts, tokens, latency and good requests
// from the formal requests.
func (c *computation) requests() {
	r, p := c.r, c.p
	r.Requests.Started = len(c.formal)
	n := len(c.formal)
	// The TTFTs and TPOTs go to the plots; the latency percentiles are
	// read from the sorted lists beside the rest (startLatencyIntervals).
	c.pd.TTFT, c.pd.TPOT = make([]float64, 0, n), make([]float64, 0, n)
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		if !q.Success {
			r.Requests.Failed++
			continue
		}
		r.Requests.Succeeded++
		r.Tokens.FormalOutput += int64(q.OutputTokens)
		r.Tokens.FormalInput += int64(q.InputTokens)
		if q.HasTTFT {
			c.pd.TTFT = append(c.pd.TTFT, q.TTFT)
		}
		if t, ok := tpot(*q); ok {
			c.pd.TPOT = append(c.pd.TPOT, t)
		}
		if c.isGood(q) {
			r.Goodput.GoodRequests++
			c.goodTokens += int64(q.OutputTokens)
		}
	}
	if r.Requests.Started > 0 {
		r.Requests.ErrorRate = float64(r.Requests.Failed) / float64(r.Requests.Started)
		if r.Requests.ErrorRate > p.MaxErrorRate {
			c.flag(contract.FlagErrorRateHigh, true, "error rate %.2f%% is over %.2f%% (%d of %d formal requests failed)", 100*r.Requests.ErrorRate, 100*p.MaxErrorRate, r.Requests.Failed, r.Requests.Started)
		}
	}
	r.Latency.FailedRequests = r.Requests.Failed
}

// isGood says whether a successful request met every SLO (a TTFT SLO
// needs a TTFT).
func (c *computation) isGood(q *Request) bool {
	if ttft := c.p.SLOTTFT.Seconds(); ttft > 0 && (!q.HasTTFT || q.TTFT > ttft) {
		return false
	}
	t, ok := tpot(*q)
	return !ok || c.p.SLOTPOT <= 0 || t <= c.p.SLOTPOT.Seconds()
}

// goodput fills the goodput section from the good requests.
func (c *computation) goodput() {
	r, p := c.r, c.p
	if p.SLOTTFT > 0 {
		r.Goodput.TTFTSLOSeconds = new(p.SLOTTFT.Seconds())
	}
	if p.SLOTPOT > 0 {
		r.Goodput.TPOTSLOSeconds = new(p.SLOTPOT.Seconds())
	}
	if r.Requests.Started > 0 {
		r.Goodput.Ratio = new(float64(r.Goodput.GoodRequests) / float64(r.Requests.Started))
	}
	if r.Energy.FormalJoules != nil && c.goodTokens > 0 {
		r.Goodput.JoulesPerGoodToken = new(*r.Energy.FormalJoules / float64(c.goodTokens))
	}
}

// throughput fills the formal stage's token rate and average power and the
// full lifecycle energy per token.
func (c *computation) throughput() {
	r := c.r
	if fb, ok := c.d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd && fb.End > fb.Start {
		dur := fb.End - fb.Start
		r.ThroughputTokensPerSecond = new(float64(r.Tokens.FormalOutput) / dur)
		if r.Energy.FormalJoules != nil {
			r.AvgGPUPowerWatts = new(*r.Energy.FormalJoules / dur)
		}
	}
	if r.Energy.LifecycleJoules != nil && r.Tokens.FormalOutput > 0 {
		r.FullLifecycleJoulesPerToken = new(*r.Energy.LifecycleJoules / float64(r.Tokens.FormalOutput))
	}
}

// startAttribution starts attributing the energy over the formal stage (or
// over the formal requests' span when its boundaries are missing, widened
// to that span anyway) to the requests, when there are formal requests and
// energy data over that span.
func (c *computation) startAttribution() {
	reqs := c.d.Requests
	from, to := math.Inf(1), math.Inf(-1)
	if fb, ok := c.d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd {
		from, to = fb.Start, fb.End
	}
	formal := false
	for i := range reqs {
		if reqs[i].Formal {
			from, to = min(from, reqs[i].Send), max(to, reqs[i].End)
			formal = true
		}
	}
	if !formal || len(c.curves) == 0 || !(to > from) {
		return
	}
	ch := make(chan attribution, 1)
	c.attr = ch
	// All requests of the run compete for the formal stage's energy
	// (a warm-up straggler is active too).
	go func() { ch <- attribute(reqs, c.curves, from, to) }()
}

// steadyState takes the attribution of the formal stage's energy to
// requests and finds the steady state in their energy per token.
func (c *computation) steadyState() {
	r, p, reqs := c.r, c.p, c.d.Requests
	r.SteadyState.Window, r.SteadyState.Windows, r.SteadyState.CVThreshold = p.SSWindow, p.SSWindows, p.SSCV
	r.SteadyState.Weighting = p.SSWeighting
	ss := make([]int32, 0, len(c.formal)) // indexes into reqs of the successful formal requests with tokens, in completion order
	for _, i := range c.formal {
		if reqs[i].Success && reqs[i].OutputTokens > 0 {
			ss = append(ss, i)
		}
	}
	if succ := len(ss); succ < 2*p.SSWindow {
		c.flag(contract.FlagTooFewRequests, true, "%d successful formal requests with output tokens, fewer than two steady-state windows (%d)", succ, 2*p.SSWindow)
	}
	switch {
	case len(c.formal) == 0:
		r.SteadyState.Reason = "no formal requests"
	case c.attr == nil:
		r.SteadyState.Reason = "no energy data over the formal stage"
	default:
		c.steadyWindow(ss, <-c.attr)
	}
	if !r.SteadyState.Reached {
		c.flag(contract.FlagSteadyStateNotReach, true, "steady state not reached: %s", r.SteadyState.Reason)
	}
}

// steadyWindow fills the steady state from the attribution and ss, the
// successful formal requests with tokens in completion order.
func (c *computation) steadyWindow(ss []int32, at attribution) {
	r, p, reqs := c.r, c.p, c.d.Requests
	r.UnattributedJoules = new(at.Unattributed)
	c.joules = at.Joules
	jpt := make([]float64, len(ss))
	var wt []float64
	if p.SSWeighting != contract.SteadyWeightRequests {
		wt = make([]float64, len(ss))
	}
	for j, i := range ss {
		jpt[j] = at.Joules[i] / float64(reqs[i].OutputTokens)
		if wt != nil {
			wt[j] = float64(reqs[i].OutputTokens)
		}
	}
	c.pd.JoulesPerToken = jpt
	// The windows are tested before the drain: the requests that ended
	// after the last formal send ran while the offered load fell.
	drain := c.drainCount(ss)
	r.SteadyState.DrainRequests = drain
	first, worst, reason := steadyStart(jpt[:len(jpt)-drain], prefix(wt, len(jpt)-drain), p.SSWindow, p.SSWindows, p.SSCV)
	if !math.IsNaN(worst) && !math.IsInf(worst, 0) {
		r.SteadyState.WindowCV = new(worst)
	}
	if first < 0 {
		if drain > 0 {
			reason += fmt.Sprintf(" (the last %d requests, the drain after the last send, are not tested)", drain)
		}
		r.SteadyState.Reason = reason
		return
	}
	r.SteadyState.Reached = true
	c.pd.SteadyFirst = first
	c.steadyFrom = first
	last := len(ss) - 1
	c.pd.SteadyLast = last
	r.SteadyState.FirstRequest, r.SteadyState.LastRequest = new(first), new(last)
	var e float64
	var tok int64
	for _, i := range ss[first:] {
		e += at.Joules[i]
		tok += int64(reqs[i].OutputTokens)
	}
	r.SteadyState.Start = new(reqs[ss[first]].Send)
	r.SteadyState.End = new(reqs[ss[last]].End)
	r.SteadyState.EnergyJoules = new(e)
	r.SteadyState.OutputTokens = new(tok)
	r.SteadyState.JoulesPerToken = new(e / float64(tok))
	r.SteadyState.Requests = new(len(ss) - first)
	c.sustainedLoad(ss[first:len(ss)-drain], at.Joules)
}

// sustainedLoad fills the steady-state J/token without the drain from the
// steady-state requests that ended by the last formal send.
func (c *computation) sustainedLoad(ss []int32, joules []float64) {
	if len(ss) == 0 {
		return
	}
	var e float64
	var tok int64
	for _, i := range ss {
		e += joules[i]
		tok += int64(c.d.Requests[i].OutputTokens)
	}
	c.r.SteadyState.SustainedLoadJoulesPerToken = new(e / float64(tok))
	c.r.SteadyState.SustainedLoadRequests = new(len(ss))
}

// drainCount is how many of ss (completion order) ended after the last
// formal request was sent: the drain, where a closed loop's concurrency
// (an open loop's arrivals) falls to zero.
func (c *computation) drainCount(ss []int32) int {
	reqs := c.d.Requests
	lastSend := math.Inf(-1)
	for _, i := range c.formal {
		lastSend = max(lastSend, reqs[i].Send)
	}
	n := 0
	for k := len(ss) - 1; k >= 0 && reqs[ss[k]].End > lastSend; k-- {
		n++
	}
	return n
}

// lifecycleEstimate fills E(N) = E_start + N·e_ss + E_release.
func (c *computation) lifecycleEstimate() {
	r := c.r
	if fixed := sumPtr(r.Energy.StartupJoules, r.Energy.ReleaseJoules); fixed != nil {
		r.LifecycleEstimate.FixedOverheadJoules = fixed
		if n := r.Requests.Started; n > 0 {
			r.LifecycleEstimate.Requests = n
			r.LifecycleEstimate.FixedOverheadPerRequestJoules = new(*fixed / float64(n))
		}
	}
	if r.SteadyState.Reached && *r.SteadyState.Requests > 0 {
		r.LifecycleEstimate.PerRequestJoules = new(*r.SteadyState.EnergyJoules / float64(*r.SteadyState.Requests))
	}
}

// powerPlot copies each GPU's power samples for the plot.
func (c *computation) powerPlot() {
	for _, g := range c.d.GPUs {
		ps := PowerSeries{Label: g.Label(), T: make([]float64, 0, len(g.Power)), W: make([]float64, 0, len(g.Power))}
		for _, s := range g.Power {
			ps.T = append(ps.T, s.T)
			ps.W = append(ps.W, s.V)
		}
		c.pd.Power = append(c.pd.Power, ps)
	}
}

// validity marks the report valid when no flag excludes it.
func (c *computation) validity() {
	c.r.Valid = true
	for _, f := range c.r.Flags {
		if f.Excluding {
			c.r.Valid = false
		}
	}
}

// sumPtr adds the values; nil when any is nil.
func sumPtr(vs ...*float64) *float64 {
	s := 0.0
	for _, v := range vs {
		if v == nil {
			return nil
		}
		s += *v
	}
	return &s
}

// prefix is x[:n], or nil when x is nil.
func prefix(x []float64, n int) []float64 {
	if x == nil {
		return nil
	}
	return x[:n]
}

// addArchive adds what the bench archive tells to the report: output
// sanity, the exporters' gaps and release basis, answer quality, and the
// run identity when Prometheus had none.
func addArchive(r *report.Report, arch *BenchArchive, p Params) {
	addOutputSanity(r, arch.sanity, p.MaxBadOutputRatio)
	addExporterGaps(r, arch.views)
	addReleaseBasis(r, arch.views)
	addQuality(r, arch.quality, arch.manifest, p.MinQuality)
	if r.Run == nil && arch.manifest != nil && arch.manifest.RunInfo != nil {
		r.Run = &report.RunIdentity{RunIdentity: *arch.manifest.RunInfo, Source: "archive"}
	}
}
