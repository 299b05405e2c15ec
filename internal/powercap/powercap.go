// Package powercap reads the host's CPU and DRAM energy from the Linux
// powercap interface (RAPL zones under /sys/class/powercap, Intel's and
// AMD's alike) and keeps one cumulative joule counter per zone, bridging the
// hardware counter's wraparound at max_energy_range_uj.
//
// Unreadable energy is never reported as 0: a zone that cannot be read
// carries a Reason (no RAPL, permission denied, read error) instead.
package powercap

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DefaultPath is where the kernel exposes the powercap zones.
const DefaultPath = "/sys/class/powercap"

// Reasons a zone or the whole host has no energy reading. They are short
// codes so they can be metric label values and report fields.
const (
	ReasonNoRAPL           = "no_rapl"           // no RAPL zone under the powercap path
	ReasonPermissionDenied = "permission_denied" // energy_uj is root-only (since Linux 5.10, CVE-2020-8694)
	ReasonReadError        = "read_error"        // the file exists but could not be read or parsed
)

// Explain turns a reason code into a sentence for logs and reports.
func Explain(reason string) string {
	switch reason {
	case ReasonNoRAPL:
		return "no RAPL powercap zone found (not an Intel/AMD host with the intel_rapl driver loaded, or a container without /sys/class/powercap)"
	case ReasonPermissionDenied:
		return "permission denied reading energy_uj (root-only since 2020, CVE-2020-8694): run the exporter as root or grant read access"
	case ReasonReadError:
		return "the RAPL energy counter could not be read"
	case "":
		return ""
	}
	return reason
}

// zoneName matches a RAPL zone directory: intel-rapl:0 (package), and
// intel-rapl:0:1 (a sub-zone). AMD processors register under the same
// control type. intel-rapl-mmio duplicates the package zone through MMIO and
// is skipped so nothing is counted twice.
var zoneName = regexp.MustCompile(`^intel-rapl(:[0-9]+)+$`)

// Zone is one RAPL powercap zone.
type Zone struct {
	// ID is the zone's directory name, e.g. "intel-rapl:0:2".
	ID string
	// Domain is the zone's name file, e.g. "package-0", "core", "dram", "psys".
	Domain string
	// Parent is the ID of the enclosing zone, "" for a top-level zone.
	Parent string
	// MaxEnergyRangeUJ is where the energy_uj counter wraps to 0 (0 when unknown).
	MaxEnergyRangeUJ uint64
}

// InTotal reports whether the zone counts in the host total: the packages
// (which include their core and uncore sub-zones) and DRAM (outside the
// package). psys overlaps the packages and is left out.
func (z Zone) InTotal() bool {
	return strings.HasPrefix(z.Domain, "package") || z.Domain == "dram"
}

// Discover lists the RAPL zones of the powercap tree fsys (the content of
// /sys/class/powercap), sorted by ID. No zone at all is ReasonNoRAPL in a
// *Error.
func Discover(fsys fs.FS) ([]Zone, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Reason: reasonOf(err), Err: fmt.Errorf("listing the powercap zones: %w", err)}
	}
	var zones []Zone
	for _, ent := range ents {
		id := ent.Name()
		if !zoneName.MatchString(id) {
			continue
		}
		name, err := fs.ReadFile(fsys, path.Join(id, "name"))
		if err != nil {
			return nil, &Error{Zone: id, Reason: reasonOf(err), Err: fmt.Errorf("reading %s/name: %w", id, err)}
		}
		z := Zone{ID: id, Domain: strings.TrimSpace(string(name))}
		if i := strings.LastIndexByte(id, ':'); strings.Count(id, ":") > 1 {
			z.Parent = id[:i]
		}
		// max_energy_range_uj is world-readable; without it a wrap cannot be
		// told from a reset, which Meter then handles as a reset.
		if b, err := fs.ReadFile(fsys, path.Join(id, "max_energy_range_uj")); err == nil {
			z.MaxEnergyRangeUJ, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		zones = append(zones, z)
	}
	if len(zones) == 0 {
		return nil, &Error{Reason: ReasonNoRAPL, Err: errors.New("no RAPL zone (intel-rapl:*) in the powercap tree")}
	}
	slices.SortFunc(zones, func(a, b Zone) int { return strings.Compare(a.ID, b.ID) })
	return zones, nil
}

// ReadEnergyUJ reads zone id's energy counter in microjoules.
func ReadEnergyUJ(fsys fs.FS, id string) (uint64, error) {
	b, err := fs.ReadFile(fsys, path.Join(id, "energy_uj"))
	if err != nil {
		return 0, &Error{Zone: id, Reason: reasonOf(err), Err: fmt.Errorf("reading %s/energy_uj: %w", id, err)}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, &Error{Zone: id, Reason: ReasonReadError, Err: fmt.Errorf("parsing %s/energy_uj: %w", id, err)}
	}
	return v, nil
}

// Error is a failed read with its reason code.
type Error struct {
	Zone   string // "" for the whole tree
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason code carried by err, ReasonReadError for any
// other error, "" for nil.
func ReasonOf(err error) string {
	if err == nil {
		return ""
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return reasonOf(err)
}

func reasonOf(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return ReasonPermissionDenied
	}
	return ReasonReadError
}

// Reading is one zone's cumulative energy since the meter started.
type Reading struct {
	Zone
	// Joules is the energy since the first successful read; valid only when
	// Reason is "".
	Joules float64
	// Reason says why the zone has no reading ("" when it has one).
	Reason string
	// Wraps counts the counter wraparounds bridged; Resets the times it went
	// back without a known range (the interval was dropped).
	Wraps, Resets uint64
}

// OK reports whether the reading holds a value.
func (r Reading) OK() bool { return r.Reason == "" }

// Meter keeps one cumulative counter per zone. Sample must run more often
// than the fastest zone wraps (minutes at full load; the exporter samples
// every 100 ms). Safe for concurrent use.
type Meter struct {
	fsys fs.FS

	mu       sync.Mutex
	reason   string // whole-tree reason when no zone was found
	zones    []Zone
	state    []zoneState
	discover error
}

type zoneState struct {
	has    bool
	last   uint64
	joules float64
	reason string
	wraps  uint64
	resets uint64
}

// NewMeter discovers the zones of fsys and takes a first reading. A host
// without RAPL gives a Meter whose Status says so; it is not an error, since
// the GPU measurement goes on without host energy.
func NewMeter(fsys fs.FS) *Meter {
	m := &Meter{fsys: fsys}
	zones, err := Discover(fsys)
	if err != nil {
		m.reason, m.discover = ReasonOf(err), err
		return m
	}
	m.zones, m.state = zones, make([]zoneState, len(zones))
	m.Sample()
	return m
}

// Sample reads every zone once and folds the deltas into the counters.
func (m *Meter) Sample() {
	if len(m.zones) == 0 {
		return
	}
	vals := make([]uint64, len(m.zones))
	errs := make([]error, len(m.zones))
	for i, z := range m.zones {
		vals[i], errs[i] = ReadEnergyUJ(m.fsys, z.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.zones {
		m.state[i].add(m.zones[i], vals[i], errs[i])
	}
}

func (s *zoneState) add(z Zone, v uint64, err error) {
	if err != nil {
		s.reason = ReasonOf(err)
		return
	}
	s.reason = ""
	if s.has {
		switch {
		case v >= s.last:
			s.joules += float64(v-s.last) / 1e6
		case z.MaxEnergyRangeUJ > 0 && s.last <= z.MaxEnergyRangeUJ:
			// the counter wrapped at max_energy_range_uj and restarted at 0
			s.joules += float64(z.MaxEnergyRangeUJ-s.last+v) / 1e6
			s.wraps++
		default:
			s.resets++
		}
	}
	s.has, s.last = true, v
}

// Continue makes each zone's counter go on from a previous meter's value
// (an exporter restarted on its saved state): joules[i] is added to zone
// i's energy so far. NaN entries, and entries beyond the zones, are
// skipped. The energy between the previous meter's value and this meter's
// first reading is not counted.
func (m *Meter) Continue(joules []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.state {
		if i < len(joules) && !math.IsNaN(joules[i]) {
			m.state[i].joules += joules[i]
		}
	}
}

// Zones lists the zones found (nil without RAPL).
func (m *Meter) Zones() []Zone { return slices.Clone(m.zones) }

// Status reports whether any zone is readable and, when none is, why (a
// reason code) and the error behind it.
func (m *Meter) Status() (ok bool, reason string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.discover != nil {
		return false, m.reason, m.discover
	}
	for _, s := range m.state {
		if s.reason == "" && s.has {
			return true, "", nil
		}
		if reason == "" || s.reason == ReasonPermissionDenied {
			reason = s.reason
		}
	}
	if reason == "" {
		reason = ReasonReadError
	}
	return false, reason, &Error{Reason: reason, Err: errors.New(Explain(reason))}
}

// Readings returns every zone's cumulative energy, in zone order.
func (m *Meter) Readings() []Reading {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Reading, len(m.zones))
	for i, z := range m.zones {
		s := m.state[i]
		r := Reading{Zone: z, Joules: s.joules, Reason: s.reason, Wraps: s.wraps, Resets: s.resets}
		if !s.has && r.Reason == "" {
			r.Reason = ReasonReadError
		}
		out[i] = r
	}
	return out
}
