package benchjob

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// recorder records a run: its archive (requests.jsonl while the run goes
// on; config.yaml, phases.json and the manifest), the manifest and the
// run's flags, the aggregates, the remote write and the summaries of its
// warm-up and formal requests. The runner drives the engine and the load, hands every
// finished request to record and notes what it learns in the manifest.
type recorder struct {
	runID string
	arch  *runarchive.Run
	reqs  *runarchive.RequestWriter
	agg   *aggregates
	rw    *remotewrite.Writer // nil without remote write
	log   *slog.Logger

	mu           sync.Mutex // one record at a time into the archive, the aggregates and the summaries
	warm, formal summaryAcc

	// man is the run's manifest. The lifecycle fills in its engine and
	// load sections alone; manMu guards its phases and GPUs, which the
	// exporters' calls, the scrapes and the end read, and flags.
	manMu sync.Mutex
	man   runarchive.Manifest
	flags map[string]bool
}

// openRecorder creates the run's archive (or takes Options.Archive) with
// its requests file, and the remote write when configured.
func openRecorder(cfg *Config, opts Options) (*recorder, error) {
	arch, reqs, err := createArchive(*cfg, opts)
	if err != nil {
		return nil, err
	}
	c := &recorder{runID: arch.ID, arch: arch, reqs: reqs, agg: newAggregates(arch.ID), log: opts.Logger, flags: map[string]bool{}}
	if cfg.RemoteWrite.URL != "" {
		c.rw, err = remotewrite.New(remotewrite.Config{URL: cfg.RemoteWrite.URL, HTTP: cfg.RemoteWrite.HTTP,
			UserAgent: "joulemark-bench"}, opts.Logger.With("component", "remote_write"))
		if err != nil {
			c.reqs.Close()
			return nil, err
		}
	}
	return c, nil
}

// record keeps one finished request: archive line, aggregates,
// remote-write samples, and its phase's summary. It does not keep rec.
func (c *recorder) record(rec *runarchive.Request) {
	if c.rw != nil {
		for _, s := range requestSamples(rec, c.runID) {
			c.rw.Append(s)
		}
	}
	// The aggregates observe the records in archive order, as runs push
	// does: a histogram's sum, a float, then comes out to the same bits.
	c.mu.Lock()
	defer c.mu.Unlock() // a panic below must not leave it held
	c.reqs.Append(rec)
	c.agg.observe(rec)
	if rec.Phase == string(contract.Warmup) {
		c.warm.add(rec)
	} else {
		c.formal.add(rec)
	}
}

// started and ended count a request in flight.
func (c *recorder) started() { c.agg.inFlight.Inc() }
func (c *recorder) ended()   { c.agg.inFlight.Dec() }

// summaries are the summaries of the warm-up and the formal requests
// recorded, each in archive order.
func (c *recorder) summaries() (warm, formal runarchive.Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warm.summary(), c.formal.summary()
}

// flushEvery flushes the requests file every interval until done closes:
// a crash loses little.
func (c *recorder) flushEvery(done <-chan struct{}, every time.Duration) {
	tickUntil(done, every, func(time.Time) { c.reqs.Flush() })
}

// tickUntil calls f with the tick's time every interval until done closes.
func tickUntil(done <-chan struct{}, every time.Duration, f func(now time.Time)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// pushAggregates sends the aggregates every interval (5 s when 0) until
// done closes; gauges, called before each push, sets the rate gauges.
func (c *recorder) pushAggregates(done <-chan struct{}, every time.Duration, gauges func(now time.Time)) {
	if c.rw == nil {
		return
	}
	if every <= 0 {
		every = 5 * time.Second
	}
	tickUntil(done, every, func(now time.Time) {
		gauges(now)
		s, err := c.agg.samples(sampleMs(unixSeconds(now)))
		if err != nil {
			c.log.Warn("aggregates", "err", err)
			return
		}
		for _, x := range s {
			c.rw.Append(x)
		}
	})
}

// closeRemoteWrite sends the final samples, all stamped at (unix
// seconds): the aggregates, settled to load, and the run identity with
// the formal phase's start; then it flushes and closes the remote write
// within ctx.
func (c *recorder) closeRemoteWrite(ctx context.Context, at float64, load runarchive.LoadInfo, info contract.RunIdentity, formalStart float64) (remotewrite.Stats, error) {
	c.agg.settle(load)
	if s, err := c.agg.samples(sampleMs(at)); err == nil {
		for _, x := range s {
			c.rw.Append(x)
		}
	}
	for _, x := range runInfoSamples(info, formalStart, at) {
		c.rw.Append(x)
	}
	return c.rw.Close(ctx)
}

// flag raises run flag f; it reports whether f is new.
func (c *recorder) flag(f string) bool {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	first := !c.flags[f]
	c.flags[f] = true
	return first
}

// flagList is the run's flags, sorted.
func (c *recorder) flagList() []string {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	return slices.Sorted(maps.Keys(c.flags))
}

// notePhase notes in the manifest that phase p was posted at t.
func (c *recorder) notePhase(p contract.Phase, t time.Time) {
	c.manMu.Lock()
	c.man.Phases[string(p)] = unixSeconds(t)
	c.manMu.Unlock()
}

// phaseStart is when phase p was posted (unix seconds); 0 when it was not.
func (c *recorder) phaseStart(p contract.Phase) float64 {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	return c.man.Phases[string(p)]
}

// postedPhases lists the phases the run posted, in lifecycle order.
func (c *recorder) postedPhases() []string {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	var out []string
	for _, p := range contract.Phases {
		if _, ok := c.man.Phases[string(p)]; ok {
			out = append(out, string(p))
		}
	}
	return out
}

// currentPhase is the phase posted last; "" before the first.
func (c *recorder) currentPhase() string {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	phase := ""
	for p, at := range c.man.Phases {
		if at > 0 && (phase == "" || at > c.man.Phases[phase]) {
			phase = p
		}
	}
	return phase
}

// setGPUs notes the GPUs the run measures on the exporter at url.
func (c *recorder) setGPUs(url string, gpus []phaseapi.GPUInfo) {
	c.manMu.Lock()
	c.man.GPUs[url] = gpus
	c.manMu.Unlock()
}

// writeManifest writes the manifest as it stands, atomically.
func (c *recorder) writeManifest() error {
	c.manMu.Lock()
	defer c.manMu.Unlock()
	return c.arch.WriteManifest(&c.man)
}
