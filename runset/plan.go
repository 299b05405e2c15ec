package runset

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/report"
)

// SecondsPerDay is the length of the planning day.
const SecondsPerDay = 86400

// PlanPoint is one run of a concurrency or rate sweep seen as a load point.
type PlanPoint struct {
	RunID string `json:"run_id"`
	// ConfiguredLoad is the sweep point as configured (manifest.json),
	// e.g. "concurrency 16"; "-" when the archive was not found.
	ConfiguredLoad string `json:"configured_load"`
	// RateRPS is the achieved rate of successful formal requests per second
	// (requests.succeeded / stages.formal.duration_seconds).
	RateRPS *float64 `json:"rate_requests_per_second"`
	// LatencySeconds is W of Little's law; the report holds percentiles only,
	// so the median end-to-end latency stands for the mean.
	LatencySeconds *float64 `json:"latency_seconds"`
	// InFlight is L = λ·W, the mean number of requests in flight.
	InFlight  *float64 `json:"in_flight"`
	MeetsSLOs bool     `json:"meets_slos"`
	Reason    string   `json:"reason,omitempty"` // why it does not
	// Repetitions is the group a pooled point stands for (Set.Pooled): its
	// rate, latency and SLO figures are the medians over the valid
	// repetitions, in flight their product.
	Repetitions *RepetitionSummary `json:"repetitions,omitempty"`

	pool *RepetitionPool
}

// The figures of a load point and of the admission run's energy, as
// metrics so that a repetition pool's are its medians (Metric.Of); keyed
// by the plan's own JSON names.
var (
	// planRate is λ: successful formal requests per second.
	planRate = Metric{Key: "rate_requests_per_second", Label: "rate_req/s", Unit: "req/s", Dir: Maximize,
		value: func(r *report.Report) *float64 {
			if f, ok := r.Stages["formal"]; ok && f.DurationSeconds > 0 {
				return f64(float64(r.Requests.Succeeded) / f.DurationSeconds)
			}
			return nil
		}}
	// planLatency is W: the median end-to-end latency.
	planLatency = Metric{Key: "latency_seconds", Label: "latency_p50", Unit: "s", Dir: Minimize,
		value: func(r *report.Report) *float64 { return r.Latency.LatencySeconds.P50 }}
	// planFixed is E_start + E_release.
	planFixed = Metric{Key: "fixed_joules_per_replica", Label: "fixed_J", Unit: "J", Dir: Minimize,
		value: func(r *report.Report) *float64 {
			if r.Energy.StartupJoules == nil || r.Energy.ReleaseJoules == nil {
				return nil
			}
			return f64(*r.Energy.StartupJoules + *r.Energy.ReleaseJoules)
		}}
	// planPerRequest is e_ss, the lifecycle estimate's per-request energy.
	planPerRequest = Metric{Key: "per_request_joules", Label: "e_ss", Unit: "J", Dir: Minimize,
		value: func(r *report.Report) *float64 { return r.LifecycleEstimate.PerRequestJoules }}
	// planPerRequestSS is e_ss where the estimate lacks it: steady-state
	// J/token × mean output tokens per request.
	planPerRequestSS = Metric{Key: "per_request_joules_from_steady_state", Label: "e_ss", Unit: "J", Dir: Minimize,
		value: func(r *report.Report) *float64 {
			if !r.SteadyState.Reached || r.SteadyState.JoulesPerToken == nil || r.Requests.Succeeded == 0 {
				return nil
			}
			return f64(*r.SteadyState.JoulesPerToken * float64(r.Tokens.FormalOutput) / float64(r.Requests.Succeeded))
		}}
)

// planMetrics are the figures a pooled point's summary gives: λ, W, the
// SLO metrics and the energy (steady-state J/token for the interval's
// coverage and the agreement).
var planMetrics = []Metric{planRate, planLatency, TTFTP95, TPOTP95, Goodput, ErrorRate, planFixed, planPerRequest, SteadyStateJPT}

// of is m of r, as a pointer: nil when missing.
func of(m Metric, r *Run) *float64 {
	if v, ok := m.Of(r); ok {
		return &v
	}
	return nil
}

// Plan is the capacity plan for a target peak rate.
type Plan struct {
	TargetPeakRateRPS float64     `json:"target_peak_rate_requests_per_second"`
	SLOs              []string    `json:"slos"`
	Points            []PlanPoint `json:"points"`
	// AdmissionLimit is the highest-rate point meeting every SLO; its
	// in-flight figure is the per-replica admission limit.
	AdmissionLimit *PlanPoint `json:"admission_limit"`
	Replicas       int        `json:"replicas"`
	// InFlightAtPeak is R·W: requests in flight across replicas at the peak.
	InFlightAtPeak float64 `json:"in_flight_at_peak"`
	RequestsPerDay float64 `json:"requests_per_day"`
	// FixedJoulesPerReplica = startup + release energy of the admission run
	// (E_start + E_release); PerRequestJoules = e_ss.
	FixedJoulesPerReplica *float64 `json:"fixed_joules_per_replica"`
	PerRequestJoules      *float64 `json:"per_request_joules"`
	RestartsPerDay        float64  `json:"restarts_per_day"`
	// EnergyPerDayJoules = replicas·restarts·(E_start+E_release) + N·e_ss,
	// the lifecycle estimate E(N) summed over replicas for N requests a day.
	EnergyPerDayJoules *float64 `json:"energy_per_day_joules"`
	EnergyPerDayKWh    *float64 `json:"energy_per_day_kwh"`
	Warnings           []string `json:"warnings,omitempty"`
	Boundary           string   `json:"boundary"`
	// CostPerDay prices EnergyPerDay; only with cost inputs.
	CostPerDay *PlanCost `json:"cost_per_day,omitempty"`
}

// PlanOptions are the inputs of a capacity plan.
type PlanOptions struct {
	TargetPeakRateRPS float64
	SLOs              []Constraint
	RestartsPerDay    float64 // startups (and releases) per replica per day
	// Cost, when any input is set, prices the energy per day.
	Cost report.CostInputs
	// Pool plans over runs that differ in model, engine, GPU or prompt set
	// (run.*); without it such runs are refused: a sweep is one
	// configuration at several load points.
	Pool bool
}

// MakePlan finds the admission limit in a load sweep and sizes the fleet for
// a target peak rate: replicas = ⌈R·W / L_adm⌉ with L_adm = λ_adm·W (Little's
// law, W taken at the admission point, which makes it ⌈R/λ_adm⌉), and the
// energy of a day at that rate from the lifecycle estimate E(N) = E_start +
// N·e_ss + E_release of the admission run. Invalid runs are listed but are
// never chosen. A pooled run (Set.Pooled) is one load point on its
// repetitions' medians.
func MakePlan(runs []*Run, opts PlanOptions) (Plan, error) {
	if err := checkPlanOptions(runs, opts); err != nil {
		return Plan{}, err
	}
	p := Plan{TargetPeakRateRPS: opts.TargetPeakRateRPS, RestartsPerDay: opts.RestartsPerDay,
		Boundary: report.Boundary}
	for _, r := range runs {
		// a run measured on a C2C module (Grace CPU included) says so
		if r.Report.Measurement.Boundary == report.BoundaryModule {
			p.Boundary = report.BoundaryModule
		}
	}
	for _, c := range opts.SLOs {
		op := "≥"
		if c.Upper {
			op = "≤"
		}
		p.SLOs = append(p.SLOs, fmt.Sprintf("%s %s %s", c.Metric.Key, op, FormatValue(c.Bound, true)))
	}
	byName := map[string]*Run{}
	for _, r := range runs {
		byName[r.Name] = r
		p.Points = append(p.Points, planPoint(r, opts.SLOs))
	}
	slices.SortStableFunc(p.Points, func(a, b PlanPoint) int {
		return cmp.Compare(deref(a.RateRPS), deref(b.RateRPS))
	})
	for i := range p.Points {
		if p.Points[i].MeetsSLOs {
			p.AdmissionLimit = &p.Points[i]
		}
	}
	if p.AdmissionLimit == nil {
		return p, errors.New("no load point meets every SLO: no admission limit")
	}
	adm := p.AdmissionLimit
	for _, pt := range p.Points {
		if !pt.MeetsSLOs && pt.RateRPS != nil && *pt.RateRPS < *adm.RateRPS {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s fails the SLOs at a lower rate than the admission limit %s: the sweep is not monotone, check it", pt.RunID, adm.RunID))
		}
	}
	if *adm.RateRPS <= 0 {
		return p, fmt.Errorf("admission point %s has no successful request", adm.RunID)
	}
	planEnergy(&p, byName[adm.RunID], opts)
	if opts.Cost.Set() {
		p.CostPerDay = planCost(&p, opts.Cost)
	}
	return p, nil
}

// checkPlanOptions refuses runs of several configurations (unless pooled)
// and a target rate or restart count that cannot be planned for.
func checkPlanOptions(runs []*Run, opts PlanOptions) error {
	if c := IdentityConflict(runs, ConfigKeys); c != "" && !opts.Pool {
		return fmt.Errorf("the runs are not one configuration at several load points: they differ in %s (plan one configuration at a time, or --pool)", c)
	}
	if opts.TargetPeakRateRPS <= 0 || math.IsNaN(opts.TargetPeakRateRPS) || math.IsInf(opts.TargetPeakRateRPS, 0) {
		return fmt.Errorf("target peak rate must be a positive number of requests per second, got %v", opts.TargetPeakRateRPS)
	}
	if opts.RestartsPerDay < 0 {
		return fmt.Errorf("restarts per day must be ≥ 0, got %v", opts.RestartsPerDay)
	}
	return nil
}

// planPoint is one run as a load point: its achieved rate, median latency,
// requests in flight, and whether it meets the SLOs (and why not).
func planPoint(r *Run, slos []Constraint) PlanPoint {
	pt := PlanPoint{RunID: r.Name, ConfiguredLoad: r.Load.String()}
	pt.RateRPS, pt.LatencySeconds = of(planRate, r), of(planLatency, r)
	if r.Pool != nil {
		s := r.Pool.Summary(planMetrics)
		pt.Repetitions, pt.pool = &s, r.Pool
	}
	if pt.RateRPS != nil && pt.LatencySeconds != nil {
		pt.InFlight = f64(*pt.RateRPS * *pt.LatencySeconds)
	}
	var why []string
	if reason := r.InvalidReason(); reason != "" {
		why = append(why, reason)
	}
	if pt.RateRPS == nil {
		why = append(why, "no formal duration: rate unknown")
	}
	for _, c := range slos {
		if w := c.Check(r); w != "" {
			why = append(why, w)
		}
	}
	pt.MeetsSLOs = len(why) == 0
	pt.Reason = strings.Join(why, "; ")
	return pt
}

// planEnergy fills the replicas and the energy per day at the target rate
// from the admission run adm (a pool's medians when it is one).
func planEnergy(p *Plan, adm *Run, opts PlanOptions) {
	if adm.Pool != nil {
		if a := adm.Pool.Agreement(); strings.HasPrefix(a.Verdict, "disagree") {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the admission limit %s is the median of repetitions that %s", adm.Name, a.Verdict))
		}
	}
	planFleet(p, of(planFixed, adm), of(planPerRequest, adm), of(planPerRequestSS, adm), opts)
}

// planFleet sizes the fleet and its energy per day from the admission
// point and its energy figures: fixed = E_start + E_release, perRequest =
// e_ss, perRequestSS = the steady-state stand-in for a missing e_ss.
func planFleet(p *Plan, fixed, perRequest, perRequestSS *float64, opts PlanOptions) {
	adm := p.AdmissionLimit
	w := 0.0
	if adm.LatencySeconds != nil {
		w = *adm.LatencySeconds
	}
	p.InFlightAtPeak = opts.TargetPeakRateRPS * w
	p.Replicas = int(math.Ceil(opts.TargetPeakRateRPS / *adm.RateRPS))
	p.RequestsPerDay = opts.TargetPeakRateRPS * SecondsPerDay
	p.FixedJoulesPerReplica, p.PerRequestJoules = fixed, perRequest
	if p.PerRequestJoules == nil && perRequestSS != nil {
		p.PerRequestJoules = perRequestSS
		p.Warnings = append(p.Warnings, "lifecycle_estimate.per_request_joules missing: e_ss = steady-state J/token × mean output tokens per request")
	}
	if p.FixedJoulesPerReplica != nil && p.PerRequestJoules != nil {
		e := float64(p.Replicas)*opts.RestartsPerDay**p.FixedJoulesPerReplica + p.RequestsPerDay**p.PerRequestJoules
		p.EnergyPerDayJoules = f64(e)
		p.EnergyPerDayKWh = f64(e / 3.6e6)
	} else {
		p.Warnings = append(p.Warnings, "energy per day unknown: the admission run lacks startup/release energy or the per-request energy")
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.Inf(-1)
	}
	return *p
}

// WritePlan prints the plan.
func WritePlan(w io.Writer, p Plan) error {
	fmt.Fprintf(w, "SLOs: %s\n", strings.Join(p.SLOs, ", "))
	rows := [][]string{{"run", "configured_load", "rate_req/s", "latency_p50_ms", "in_flight", "meets_slos", "reason"}}
	for _, pt := range p.Points {
		mark := "yes"
		if !pt.MeetsSLOs {
			mark = "no"
		}
		if p.AdmissionLimit != nil && pt.RunID == p.AdmissionLimit.RunID {
			mark = "yes (admission limit)"
		}
		reason := pt.Reason
		if pt.pool != nil {
			reason = strings.TrimPrefix(reason+"; "+poolNote(pt.pool), "; ")
		}
		if reason == "" {
			reason = "-"
		}
		rows = append(rows, []string{pt.RunID, pt.ConfiguredLoad, fmtp(pt.RateRPS), latencyMs(pt.LatencySeconds), fmtp(pt.InFlight), mark, reason})
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	for _, s := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	if p.AdmissionLimit == nil {
		fmt.Fprintln(w, "admission limit: none (no point meets every SLO)")
		return nil
	}
	a := p.AdmissionLimit
	fmt.Fprintf(w, "admission limit: %s (configured %s): %s req/s per replica, %s requests in flight (Little's law L = λ·W, W = p50 latency)\n",
		a.RunID, a.ConfiguredLoad, fmtp(a.RateRPS), fmtp(a.InFlight))
	if a.pool != nil {
		fmt.Fprintf(w, "  repetition group %s: λ, W and the energy figures below are medians over its valid repetitions: %s\n", a.RunID, poolNote(a.pool))
	}
	fmt.Fprintf(w, "target peak rate: %s req/s → %s in flight → replicas: %d\n",
		FormatValue(p.TargetPeakRateRPS, true), FormatValue(p.InFlightAtPeak, true), p.Replicas)
	fmt.Fprintf(w, "energy per day at the peak rate: %s J (%s kWh) = %d replicas × %s restart(s) × %s J (E_start+E_release) + %s requests × %s J (e_ss); %s\n",
		fmtp(p.EnergyPerDayJoules), fmtp(p.EnergyPerDayKWh), p.Replicas, FormatValue(p.RestartsPerDay, true),
		fmtp(p.FixedJoulesPerReplica), FormatValue(p.RequestsPerDay, true), fmtp(p.PerRequestJoules), p.Boundary)
	writePlanCost(w, p.CostPerDay)
	return nil
}

func fmtp(v *float64) string {
	if v == nil {
		return "-"
	}
	return FormatValue(*v, true)
}

// WritePlanJSON writes the plan as indented JSON.
func WritePlanJSON(w io.Writer, p Plan) error {
	return writeJSON(w, p)
}

// latencyMs formats a latency in seconds as milliseconds for a table
// cell ("-" when missing).
func latencyMs(s *float64) string {
	if s == nil {
		return "-"
	}
	return FormatValue(*s*1000, true)
}

// WritePlanFile writes the plan as JSON to a new file at path; an existing
// file is never overwritten.
func WritePlanFile(path string, p Plan) error {
	var buf bytes.Buffer
	if err := WritePlanJSON(&buf, p); err != nil {
		return err
	}
	return WriteFileNew(path, buf.Bytes())
}
