package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// EngineState is the simulated inference engine's lifecycle state, which
// shapes the simulated power.
type EngineState int

// Engine states.
const (
	// EngineStopped: no engine on the GPUs; power decays to idle with time
	// constant DecayTau (the release decay).
	EngineStopped EngineState = iota
	// EngineLoading: the engine loads weights and warms up; power ramps
	// toward StartupWatts.
	EngineLoading
	// EngineRunning: power follows the load: idle + load·(MaxWatts − idle).
	EngineRunning
)

func (s EngineState) String() string {
	switch s {
	case EngineStopped:
		return "stopped"
	case EngineLoading:
		return "loading"
	case EngineRunning:
		return "running"
	}
	return fmt.Sprintf("EngineState(%d)", int(s))
}

// SimConfig shapes the simulated GPUs. Zero fields take the defaults noted.
// Its kong tags make it the exporter's --sim.* flags (hidden: simulator
// knobs and faults).
type SimConfig struct {
	GPUs         int     `kong:"-"`                                                                                             // number of GPUs (default 1)
	IdleWatts    float64 `hidden:"" name:"idle-watts" group:"Simulated GPUs" help:"Simulated idle power per GPU."`              // idle power (default 70); each GPU gets a seeded ±2% offset
	MaxWatts     float64 `hidden:"" name:"max-watts" group:"Simulated GPUs" help:"Simulated power at full load."`               // power at load 1 (default 700)
	StartupWatts float64 `hidden:"" name:"startup-watts" group:"Simulated GPUs" help:"Simulated power while the engine loads."` // power the startup ramp goes toward (default 250)
	// RampSeconds is the time constant of every rise and of load changes
	// while the engine runs (default 1.5).
	RampSeconds float64 `hidden:"" name:"ramp-seconds" group:"Simulated GPUs" help:"Time constant of simulated power rises."`
	// DecayTau is the time constant, in seconds, of the release decay to idle
	// after the engine stops (default 8).
	DecayTau float64 `hidden:"" name:"decay-seconds" group:"Simulated GPUs" help:"Time constant of the simulated release decay."`
	// NoiseWatts is the RMS of a smooth seeded noise (a sum of slow
	// sinusoids) added to every GPU; 0 means none.
	NoiseWatts float64 `hidden:"" name:"noise-watts" group:"Simulated GPUs" help:"RMS of the simulated power noise."`
	Seed       uint64  `hidden:"" name:"seed" group:"Simulated GPUs" help:"Seed of the simulated noise."`
	// UUIDSeed names this simulator's GPUs: their UUIDs derive from it, so
	// two simulated exporters with different seeds (the command derives one
	// from the host name and listen address, or --sim.uuid-seed) never
	// report the same UUID, as two hosts' real GPUs never do. Empty: the
	// fixed UUIDs GPU-5e000000-0000-4000-8000-<index>.
	UUIDSeed string `hidden:"" name:"uuid-seed" group:"Simulated GPUs" help:"Seed of the simulated GPUs' UUIDs: exporters with different seeds report different UUIDs, as two hosts' GPUs do (default: the host name and --web.listen-address; give the same seed to two exporters to make their UUIDs collide)."`
	// EnergyCounter makes Sample report a cumulative energy counter with
	// NVML's millijoule resolution, as Volta and later GPUs do.
	EnergyCounter bool `hidden:"" name:"energy-counter" group:"Simulated GPUs" help:"Simulated GPUs report an energy counter (else energy is integrated)."`
	// CounterPeriod is how often the simulated counter updates, as real
	// drivers update theirs about every 100 ms (0: continuously).
	CounterPeriod time.Duration `hidden:"" name:"counter-period" group:"Simulated GPUs" help:"How often the simulated energy counter updates (real drivers: about 100ms; 0: continuously)."`
	// CounterOffset is the phase of the counter's update grid: updates fall
	// at CounterOffset + k·CounterPeriod (plus jitter) after the epoch.
	CounterOffset time.Duration `hidden:"" name:"counter-offset" group:"Simulated GPUs" help:"Phase of the simulated counter's update grid (updates at offset + k·period)."`
	// CounterJitter moves every counter update by a seeded, uniformly
	// distributed amount in [−CounterJitter, +CounterJitter]; at most
	// 0.45·CounterPeriod so updates stay in order.
	CounterJitter time.Duration `hidden:"" name:"counter-jitter" group:"Simulated GPUs" help:"Each simulated counter update moves by a seeded amount within ±this (at most 0.45·--sim.counter-period)."`
	// HangBlocksClose makes Close block for good while a call of a hung
	// GPU (HangGPU) is in flight, as NVML's shutdown does behind a hung
	// driver call (the NVML backend's Close waits for its calls); without
	// it, Close releases the hung calls.
	HangBlocksClose bool `hidden:"" name:"hang-shutdown" group:"Simulated GPUs" help:"With --sim.hang-gpu: the hung call also blocks the backend's shutdown for good, as NVML's shutdown behind a hung driver call (the exporter exits anyway, after a bounded wait)."`
	// DownAtStart lists GPUs that fail to open at start, as a GPU failing
	// nvmlDeviceGetHandleByIndex: Devices lists them with Err and no UUID,
	// and their reads fail, until DownFor has passed since NewSim (0: for
	// good); then they open with their identity.
	DownAtStart []int         `kong:"-"`
	DownFor     time.Duration `hidden:"" name:"down-for" group:"Simulated GPUs" help:"How long --sim.down-gpu stays down after the start (0: for good)."`
	// LostGPUs lists GPUs whose reads fail with "GPU is lost" (NVML's
	// ERROR_GPU_IS_LOST, an Xid 79) from LostAfter after NewSim, for good,
	// or for LostFor when it is > 0; their identity stays (Devices).
	LostGPUs  []int         `kong:"-"`
	LostAfter time.Duration `hidden:"" name:"lost-after" group:"Simulated GPUs" help:"When --sim.lost-gpu is lost, after the exporter starts."`
	LostFor   time.Duration `hidden:"" name:"lost-for" group:"Simulated GPUs" help:"How long --sim.lost-gpu stays lost (0: for good); it then answers again with the same UUID."`
	// CounterJumpAfter, when > 0 with EnergyCounter, makes one energy
	// counter read, the first of any GPU at or after this long after
	// NewSim, return the counter plus CounterJumpJoules (a bogus read).
	CounterJumpAfter time.Duration `hidden:"" name:"counter-jump-after" group:"Simulated GPUs" help:"With --sim.energy-counter: one energy counter read, the first of any GPU this long after the start, returns the counter plus 1e12 mJ (a bogus read); 0: none."`
	// PowerBias makes every power reading (Sample.PowerWatts, the average
	// power of SlowSample) this factor times the power the energy counter,
	// PowerAt and ExactEnergy integrate, as a real GPU's field 186 may read
	// a few percent off its counter (default 1; 0.5..1.5).
	PowerBias float64 `hidden:"" name:"power-bias" group:"Simulated GPUs" help:"Simulated power readings are this factor times the power the simulated energy counter integrates (a real GPU's instant power may read a few percent off its counter); 0.5..1.5."`
	// History is how long ExactEnergy can look back (default 1h).
	History time.Duration `kong:"-"`
	Clock   Clock         `kong:"-"` // default RealClock
}

// SimDefaults is the simulator's default configuration, the exporter's
// --sim.* flags' defaults. NewSim takes a zero field's value from it,
// except NoiseWatts and Seed, whose zero means what it says (no noise,
// seed 0); the flags refuse a zero NewSim would replace.
func SimDefaults() SimConfig {
	return SimConfig{GPUs: 1, IdleWatts: 70, MaxWatts: 700, StartupWatts: 250, RampSeconds: 1.5, DecayTau: 8,
		NoiseWatts: 0.5, Seed: 1, History: time.Hour, PowerBias: 1}
}

const noiseTerms = 4

// SimEnginePID is the PID the simulated engine's process has on every GPU
// it loads.
const SimEnginePID = 4242

// Sim is a set of simulated GPUs with a piecewise closed-form power
// function; ExactEnergy integrates it exactly. Safe for concurrent use.
type Sim struct {
	cfg   SimConfig
	clock Clock
	epoch time.Time

	mu    sync.RWMutex
	state EngineState
	gpus  []*simGPU

	jumped atomic.Bool // the CounterJumpAfter read happened

	hangMu    sync.Mutex
	hung      map[int]bool
	inHang    int           // calls blocked in a hung GPU
	done      chan struct{} // closed by Close: hung calls return
	closeOnce sync.Once
}

type simGPU struct {
	idle float64
	load float64
	// detached: not one of the engine's GPUs; it idles whatever the
	// engine does (SetGPUAttached).
	detached bool
	// state, when own, is this GPU's engine state (SetGPUEngineState: an
	// engine of its own), else the Sim's.
	state EngineState
	own   bool
	// mem, when set, is what its engine keeps in memory (SetGPUMemory).
	mem *SimMemory
	// noise: sum of a·sin(ω t + φ)
	amp, omega, phase [noiseTerms]float64
	segs              []segment
}

// segment: from start (seconds since epoch) the dynamic power above idle is
// target + (x0 − target)·exp(−(t − start)/tau); cum is the dynamic energy
// from the epoch to start.
type segment struct {
	start, x0, target, tau, cum float64
}

// NewSim validates cfg and returns simulated GPUs, idle, engine running at load 0.
func NewSim(cfg SimConfig) (*Sim, error) {
	d := SimDefaults()
	cfg.GPUs = cmp.Or(cfg.GPUs, d.GPUs)
	cfg.IdleWatts = cmp.Or(cfg.IdleWatts, d.IdleWatts)
	cfg.MaxWatts = cmp.Or(cfg.MaxWatts, d.MaxWatts)
	cfg.StartupWatts = cmp.Or(cfg.StartupWatts, d.StartupWatts)
	cfg.RampSeconds = cmp.Or(cfg.RampSeconds, d.RampSeconds)
	cfg.DecayTau = cmp.Or(cfg.DecayTau, d.DecayTau)
	cfg.History = cmp.Or(cfg.History, d.History)
	cfg.PowerBias = cmp.Or(cfg.PowerBias, d.PowerBias)
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	switch {
	case cfg.GPUs < 0 || cfg.GPUs > 1024:
		return nil, fmt.Errorf("sim: GPUs %d: want 1..1024", cfg.GPUs)
	case cfg.IdleWatts < 0:
		return nil, fmt.Errorf("sim: idle power %g W: want > 0", cfg.IdleWatts)
	case cfg.MaxWatts < cfg.IdleWatts*1.03:
		return nil, fmt.Errorf("sim: max power %g W must exceed idle power %g W", cfg.MaxWatts, cfg.IdleWatts)
	case cfg.StartupWatts < cfg.IdleWatts*1.03 || cfg.StartupWatts > cfg.MaxWatts:
		return nil, fmt.Errorf("sim: startup power %g W: want between idle %g W and max %g W", cfg.StartupWatts, cfg.IdleWatts, cfg.MaxWatts)
	case cfg.RampSeconds < 0 || cfg.DecayTau < 0:
		return nil, fmt.Errorf("sim: ramp %gs / decay %gs: want > 0", cfg.RampSeconds, cfg.DecayTau)
	case cfg.NoiseWatts < 0 || cfg.NoiseWatts > cfg.IdleWatts/4:
		return nil, fmt.Errorf("sim: noise %g W: want 0..%g W (a quarter of idle power)", cfg.NoiseWatts, cfg.IdleWatts/4)
	case cfg.CounterPeriod < 0:
		return nil, errors.New("sim: negative counter period")
	case cfg.CounterJitter < 0 || cfg.CounterOffset < 0:
		return nil, fmt.Errorf("sim: counter jitter %v / offset %v: want ≥ 0", cfg.CounterJitter, cfg.CounterOffset)
	case cfg.CounterJitter > 0 && float64(cfg.CounterJitter) > 0.45*float64(cfg.CounterPeriod):
		return nil, fmt.Errorf("sim: counter jitter %v: want at most 0.45 × the counter period %v", cfg.CounterJitter, cfg.CounterPeriod)
	case cfg.History < 0:
		return nil, errors.New("sim: negative history")
	case !(cfg.PowerBias >= 0.5 && cfg.PowerBias <= 1.5):
		return nil, fmt.Errorf("sim: power bias %g: want 0.5..1.5", cfg.PowerBias)
	case cfg.DownFor < 0:
		return nil, fmt.Errorf("sim: down for %v: want ≥ 0", cfg.DownFor)
	case cfg.LostAfter < 0 || cfg.LostFor < 0:
		return nil, fmt.Errorf("sim: lost after %v / for %v: want ≥ 0", cfg.LostAfter, cfg.LostFor)
	case cfg.CounterJumpAfter < 0 || cfg.CounterJumpAfter > 0 && !cfg.EnergyCounter:
		return nil, fmt.Errorf("sim: counter jump after %v: want ≥ 0, and an energy counter", cfg.CounterJumpAfter)
	}
	for _, i := range slices.Concat(cfg.DownAtStart, cfg.LostGPUs) {
		if i < 0 || i >= cfg.GPUs {
			return nil, fmt.Errorf("sim: GPU %d down at start or lost: there are %d simulated GPUs", i, cfg.GPUs)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6a6f756c656d6172))
	s := &Sim{cfg: cfg, clock: cfg.Clock, epoch: cfg.Clock.Now(), state: EngineRunning, hung: map[int]bool{}, done: make(chan struct{})}
	for range cfg.GPUs {
		g := &simGPU{idle: cfg.IdleWatts * (1 + 0.04*(rng.Float64()-0.5))}
		for k := range noiseTerms {
			// periods between 2 s and 20 s: smooth at a 10 Hz sampling rate
			g.omega[k] = 2 * math.Pi / (2 + 18*rng.Float64())
			g.phase[k] = 2 * math.Pi * rng.Float64()
			g.amp[k] = cfg.NoiseWatts * math.Sqrt(2.0/noiseTerms)
		}
		g.segs = []segment{{start: 0, x0: 0, target: 0, tau: cfg.RampSeconds}}
		s.gpus = append(s.gpus, g)
	}
	return s, nil
}

func (s *Sim) sec(t time.Time) float64 { return t.Sub(s.epoch).Seconds() }

// Devices lists the simulated GPUs.
func (s *Sim) Devices() []Device {
	out := make([]Device, len(s.gpus))
	es := EnergyIntegrated
	if s.cfg.EnergyCounter {
		es = EnergyCounter
	}
	for i := range s.gpus {
		if s.down(i) {
			out[i] = Device{Index: i, Name: "unknown", DriverVersion: "sim", MIGMode: MIGUnsupported,
				Err: fmt.Sprintf("sim: GPU %d failed to open at start (--sim.down-gpu)", i)}
			continue
		}
		out[i] = Device{
			Index: i, UUID: SimUUID(s.cfg.UUIDSeed, i),
			Name: "Simulated GPU", DriverVersion: "sim", PowerSource: PowerSim, EnergySource: es,
			MemoryTotalBytes: 80 << 30, PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i), Architecture: "sim",
			MIGMode: MIGDisabled, PowerScope: ScopeGPU, EnergyScope: ScopeGPU,
		}
	}
	return out
}

// down tells whether GPU i is still down since the start (DownAtStart).
func (s *Sim) down(i int) bool {
	if !slices.Contains(s.cfg.DownAtStart, i) {
		return false
	}
	return s.cfg.DownFor == 0 || s.clock.Now().Sub(s.epoch) < s.cfg.DownFor
}

// CounterJumpJoules is what the CounterJumpAfter read adds to the counter:
// 1e12 mJ.
const CounterJumpJoules = 1e9

// lost tells whether GPU i's reads fail with "GPU is lost" now (LostGPUs).
func (s *Sim) lost(i int) error {
	if !slices.Contains(s.cfg.LostGPUs, i) {
		return nil
	}
	d := s.clock.Now().Sub(s.epoch)
	if d < s.cfg.LostAfter || s.cfg.LostFor > 0 && d >= s.cfg.LostAfter+s.cfg.LostFor {
		return nil
	}
	return fmt.Errorf("sim: GPU %d: GPU is lost (--sim.lost-gpu)", i)
}

// counterJump is what the counter read at t (seconds since the epoch)
// adds: CounterJumpJoules once, at the first read at or after
// CounterJumpAfter.
func (s *Sim) counterJump(t float64) float64 {
	if s.cfg.CounterJumpAfter <= 0 || t < s.cfg.CounterJumpAfter.Seconds() || !s.jumped.CompareAndSwap(false, true) {
		return 0
	}
	return CounterJumpJoules
}

// HangGPU makes every later Sample and SlowSample of GPU i block until
// Close (for good with SimConfig.HangBlocksClose), as a driver call that
// hangs does.
func (s *Sim) HangGPU(i int) {
	s.hangMu.Lock()
	defer s.hangMu.Unlock()
	s.hung[i] = true
}

// hang blocks while GPU i is hung and the Sim open.
func (s *Sim) hang(i int) error {
	s.hangMu.Lock()
	h := s.hung[i]
	if h {
		s.inHang++
	}
	s.hangMu.Unlock()
	if !h {
		return nil
	}
	if s.cfg.HangBlocksClose {
		select {} // as a driver call that never returns
	}
	<-s.done
	return fmt.Errorf("sim: GPU %d: call hung until the simulator closed", i)
}

// Sample returns GPU i's power now.
func (s *Sim) Sample(i int) (Sample, error) {
	if err := s.hang(i); err != nil {
		return Sample{}, err
	}
	if s.down(i) {
		return Sample{}, fmt.Errorf("sim: GPU %d not opened (down at start, --sim.down-gpu)", i)
	}
	if err := s.lost(i); err != nil {
		return Sample{}, err
	}
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.gpus) {
		return Sample{}, fmt.Errorf("sim: no GPU %d", i)
	}
	g := s.gpus[i]
	t := s.sec(now)
	out := Sample{Time: now, PowerWatts: s.cfg.PowerBias * g.power(t)}
	if s.cfg.EnergyCounter {
		tc := s.counterTime(t)
		out.EnergyJoules = math.Floor(g.energy(tc)*1000)/1000 + s.counterJump(t)
		out.HasEnergy = true
	}
	return out, nil
}

// counterTime is the time of the latest counter update at or before t
// (seconds since the epoch); t itself for a continuous counter.
func (s *Sim) counterTime(t float64) float64 {
	p := s.cfg.CounterPeriod.Seconds()
	if p <= 0 {
		return t
	}
	off, jit := s.cfg.CounterOffset.Seconds(), s.cfg.CounterJitter.Seconds()
	at := func(k float64) float64 {
		u := off + k*p
		if jit > 0 {
			u += jit * (2*unitHash(s.cfg.Seed, int64(k)) - 1)
		}
		return u
	}
	k := math.Floor((t - off) / p)
	switch {
	case at(k+1) <= t:
		k++
	case at(k) > t:
		k--
	}
	return math.Max(0, at(k))
}

// unitHash maps (seed, k) to [0, 1) (splitmix64): the seeded jitter of
// counter update k, the same on every call.
func unitHash(seed uint64, k int64) float64 {
	z := seed ^ uint64(k)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// SlowSample returns plausible context values derived from the power.
func (s *Sim) SlowSample(i int) (SlowSample, error) {
	if err := s.hang(i); err != nil {
		return SlowSample{}, err
	}
	if s.down(i) {
		return SlowSample{}, fmt.Errorf("sim: GPU %d not opened (down at start, --sim.down-gpu)", i)
	}
	if err := s.lost(i); err != nil {
		return SlowSample{}, err
	}
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.gpus) {
		return SlowSample{}, fmt.Errorf("sim: no GPU %d", i)
	}
	g := s.gpus[i]
	p := g.power(s.sec(now))
	util := math.Max(0, math.Min(1, (p-g.idle)/(s.cfg.MaxWatts-g.idle)))
	mem, procs := s.memoryLocked(g)
	pids := []uint32{}
	if procs > 0 {
		pids = []uint32{SimEnginePID}
	}
	return SlowSample{
		MemoryUsedBytes: mem, UtilizationRatio: math.Round(util*100) / 100,
		TemperatureCelsius: math.Round(30 + 45*util), PowerLimitWatts: s.cfg.MaxWatts,
		SMClockHertz: 1980e6, HasClockEvents: true, ComputeProcesses: len(pids), ComputePIDs: pids, AvgPowerWatts: s.cfg.PowerBias * p,
	}, nil
}

// Close releases hung calls; with SimConfig.HangBlocksClose it blocks for
// good while a call hangs, as NVML's shutdown behind a hung driver call.
func (s *Sim) Close() error {
	s.hangMu.Lock()
	blocked := s.cfg.HangBlocksClose && s.inHang > 0
	s.hangMu.Unlock()
	if blocked {
		select {}
	}
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}

// SetLoad sets the load (0..1) of every GPU.
func (s *Sim) SetLoad(load float64) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gpus {
		g.load = clamp01(load)
	}
	s.retarget(now)
}

// SetGPULoad sets the load (0..1) of GPU i.
func (s *Sim) SetGPULoad(i int, load float64) error {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.gpus) {
		return fmt.Errorf("sim: no GPU %d (have %d)", i, len(s.gpus))
	}
	s.gpus[i].load = clamp01(load)
	s.retarget(now)
	return nil
}

// SetEngineState moves the simulated engine to st.
func (s *Sim) SetEngineState(st EngineState) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = st
	s.retarget(now)
}

// EngineState is the current simulated engine state.
func (s *Sim) EngineState() EngineState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

// PowerAt is GPU i's exact power at t (NaN for an unknown GPU or a time
// before the kept history).
func (s *Sim) PowerAt(i int, t time.Time) float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.gpus) {
		return math.NaN()
	}
	g := s.gpus[i]
	x := s.sec(t)
	if x < g.segs[0].start {
		return math.NaN()
	}
	return g.power(x)
}

// ExactEnergy is the exact integral of GPU i's power over [t0, t1] in
// joules: the ground truth tests compare measured energy against. It is NaN
// for an unknown GPU or when t0 is older than the kept history.
func (s *Sim) ExactEnergy(i int, t0, t1 time.Time) float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.gpus) {
		return math.NaN()
	}
	g := s.gpus[i]
	a, b := s.sec(t0), s.sec(t1)
	if a < g.segs[0].start || b < g.segs[0].start {
		return math.NaN()
	}
	return g.energy(b) - g.energy(a)
}

func clamp01(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return math.Min(v, 1)
}

// retarget starts a new segment on every GPU whose target or time constant
// changed. Called with s.mu held.
func (s *Sim) retarget(now time.Time) {
	t := s.sec(now)
	for _, g := range s.gpus {
		last := &g.segs[len(g.segs)-1]
		if t < last.start {
			t = last.start
		}
		state := s.state
		if g.own {
			state = g.state
		}
		var target float64
		switch {
		case g.detached: // not the engine's GPU: idle
		case state == EngineLoading:
			target = math.Max(0, s.cfg.StartupWatts-g.idle)
		case state == EngineRunning:
			target = g.load * (s.cfg.MaxWatts - g.idle)
		}
		x := last.dyn(t)
		tau := s.cfg.RampSeconds
		if target < x && state == EngineStopped {
			tau = s.cfg.DecayTau
		}
		if target == last.target && tau == last.tau {
			continue
		}
		cum := last.cum + last.integral(last.start, t)
		if t == last.start {
			last.target, last.tau = target, tau
			continue
		}
		g.segs = append(g.segs, segment{start: t, x0: x, target: target, tau: tau, cum: cum})
		// forget what is older than History, keeping the segment in force then
		cut := t - s.cfg.History.Seconds()
		k := sort.Search(len(g.segs), func(j int) bool { return g.segs[j].start > cut }) - 1
		if k > 0 {
			g.segs = append(g.segs[:0], g.segs[k:]...)
		}
	}
}

func (sg segment) dyn(t float64) float64 {
	return sg.target + (sg.x0-sg.target)*math.Exp(-(t-sg.start)/sg.tau)
}

func (sg segment) integral(a, b float64) float64 {
	return sg.target*(b-a) + (sg.x0-sg.target)*sg.tau*(math.Exp(-(a-sg.start)/sg.tau)-math.Exp(-(b-sg.start)/sg.tau))
}

func (g *simGPU) seg(t float64) segment {
	n := len(g.segs)
	if g.segs[n-1].start <= t {
		return g.segs[n-1]
	}
	k := sort.Search(n, func(j int) bool { return g.segs[j].start > t }) - 1
	if k < 0 {
		k = 0
	}
	return g.segs[k]
}

func (g *simGPU) power(t float64) float64 {
	p := g.idle + g.seg(t).dyn(t)
	for k := range noiseTerms {
		p += g.amp[k] * math.Sin(g.omega[k]*t+g.phase[k])
	}
	return p
}

// energy is the exact energy from the epoch to t.
func (g *simGPU) energy(t float64) float64 {
	sg := g.seg(t)
	e := g.idle*t + sg.cum + sg.integral(sg.start, t)
	for k := range noiseTerms {
		e += g.amp[k] / g.omega[k] * (math.Cos(g.phase[k]) - math.Cos(g.omega[k]*t+g.phase[k]))
	}
	return e
}

// SimUUID is the UUID of simulated GPU i under seed (SimConfig.UUIDSeed):
// GPU-5e000000-0000-4000-8000-<index> without a seed, else with the
// seed's FNV-1a hash in its first groups.
func SimUUID(seed string, i int) string {
	if seed == "" {
		return fmt.Sprintf("GPU-5e000000-0000-4000-8000-%012d", i)
	}
	h := fnv.New64a()
	h.Write([]byte(seed))
	v := h.Sum64()
	return fmt.Sprintf("GPU-5e%06x-%04x-4000-8000-%012d", v>>40, v&0xffff, i)
}
