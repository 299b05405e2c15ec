package powercap

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// fakeTree is a powercap tree as a two-socket server exposes it: packages
// with core and dram sub-zones, psys, and the MMIO duplicate of package 0.
func fakeTree() fstest.MapFS {
	f := fstest.MapFS{}
	zone := func(id, name, energy, maxRange string) {
		f[id+"/name"] = &fstest.MapFile{Data: []byte(name + "\n")}
		f[id+"/energy_uj"] = &fstest.MapFile{Data: []byte(energy + "\n")}
		f[id+"/max_energy_range_uj"] = &fstest.MapFile{Data: []byte(maxRange + "\n")}
	}
	zone("intel-rapl:0", "package-0", "1000000", "262143328850")
	zone("intel-rapl:0:0", "core", "500000", "262143328850")
	zone("intel-rapl:0:1", "dram", "200000", "65712999613")
	zone("intel-rapl:1", "package-1", "3000000", "262143328850")
	zone("intel-rapl:2", "psys", "9000000", "262143328850")
	zone("intel-rapl-mmio:0", "package-0", "1000000", "262143328850")
	f["intel-rapl/enabled"] = &fstest.MapFile{Data: []byte("1\n")}
	return f
}

func setEnergy(f fstest.MapFS, id, v string) {
	f[id+"/energy_uj"] = &fstest.MapFile{Data: []byte(v + "\n")}
}

func TestDiscover(t *testing.T) {
	zones, err := Discover(fakeTree())
	if err != nil {
		t.Fatal(err)
	}
	want := []Zone{
		{ID: "intel-rapl:0", Domain: "package-0", MaxEnergyRangeUJ: 262143328850},
		{ID: "intel-rapl:0:0", Domain: "core", Parent: "intel-rapl:0", MaxEnergyRangeUJ: 262143328850},
		{ID: "intel-rapl:0:1", Domain: "dram", Parent: "intel-rapl:0", MaxEnergyRangeUJ: 65712999613},
		{ID: "intel-rapl:1", Domain: "package-1", MaxEnergyRangeUJ: 262143328850},
		{ID: "intel-rapl:2", Domain: "psys", MaxEnergyRangeUJ: 262143328850},
	}
	if len(zones) != len(want) {
		t.Fatalf("zones %+v, want %+v", zones, want)
	}
	for i := range want {
		if zones[i] != want[i] {
			t.Errorf("zone %d = %+v, want %+v", i, zones[i], want[i])
		}
	}
	var total []string
	for _, z := range zones {
		if z.InTotal() {
			total = append(total, z.Domain)
		}
	}
	if got := len(total); got != 3 || total[0] != "package-0" || total[1] != "dram" || total[2] != "package-1" {
		t.Errorf("zones in the host total %v, want package-0, dram, package-1 (core inside the package, psys overlapping)", total)
	}
}

func TestMeterDeltasAndWraparound(t *testing.T) {
	f := fakeTree()
	m := NewMeter(f)
	if ok, reason, err := m.Status(); !ok {
		t.Fatalf("status %v %q %v", ok, reason, err)
	}
	setEnergy(f, "intel-rapl:0", "3500000") // +2.5 J
	m.Sample()
	// package-0 wraps: 262143328850 - 262143000000 + 1000000 µJ later
	setEnergy(f, "intel-rapl:0", "262143000000")
	m.Sample()
	setEnergy(f, "intel-rapl:0", "1000000")
	m.Sample()
	r := byID(t, m.Readings(), "intel-rapl:0")
	want := 2.5 + (262143000000-3500000)/1e6 + (262143328850-262143000000+1000000)/1e6
	if math.Abs(r.Joules-want) > 1e-6 || r.Wraps != 1 || r.Resets != 0 {
		t.Errorf("package-0 %+v, want %.6f J over one wrap", r, want)
	}
	if r := byID(t, m.Readings(), "intel-rapl:1"); r.Joules != 0 || !r.OK() {
		t.Errorf("an unchanged zone %+v, want 0 J and readable", r)
	}
}

func TestMeterWithoutRangeTreatsGoingBackAsReset(t *testing.T) {
	f := fakeTree()
	f["intel-rapl:1/max_energy_range_uj"] = &fstest.MapFile{Data: []byte("0\n")}
	m := NewMeter(f)
	setEnergy(f, "intel-rapl:1", "1000")
	m.Sample()
	setEnergy(f, "intel-rapl:1", "2001000")
	m.Sample()
	if r := byID(t, m.Readings(), "intel-rapl:1"); r.Resets != 1 || math.Abs(r.Joules-2) > 1e-9 {
		t.Errorf("reading %+v, want one reset and only the 2 J after it", r)
	}
}

func TestMissingZoneAndNoRAPL(t *testing.T) {
	m := NewMeter(fstest.MapFS{"intel-rapl/enabled": {Data: []byte("0\n")}})
	ok, reason, err := m.Status()
	if ok || reason != ReasonNoRAPL || err == nil {
		t.Errorf("empty tree: status %v %q %v, want not ok, %q", ok, reason, err, ReasonNoRAPL)
	}
	if len(m.Readings()) != 0 {
		t.Errorf("readings without RAPL: %v", m.Readings())
	}
	// a directory that does not exist at all (container without sysfs)
	m = NewMeter(os.DirFS(filepath.Join(t.TempDir(), "absent")))
	if ok, reason, _ := m.Status(); ok || reason != ReasonNoRAPL {
		t.Errorf("absent tree: status %v %q", ok, reason)
	}

	// a zone that disappears (module unloaded, CPU offlined) keeps its
	// joules but reports a reason instead of a fresh value
	f := fakeTree()
	m = NewMeter(f)
	setEnergy(f, "intel-rapl:1", "4000000")
	m.Sample()
	delete(f, "intel-rapl:1/energy_uj")
	m.Sample()
	r := byID(t, m.Readings(), "intel-rapl:1")
	if r.OK() || r.Reason != ReasonReadError || r.Joules != 1 {
		t.Errorf("vanished zone %+v, want reason %q and the 1 J read before", r, ReasonReadError)
	}
	if ok, _, _ := m.Status(); !ok {
		t.Error("one vanished zone made the whole host unreadable")
	}
}

// denyFS answers permission denied for every energy_uj, as the kernel does
// for a non-root reader since 2020.
type denyFS struct{ fstest.MapFS }

func (d denyFS) Open(name string) (fs.File, error) {
	if filepath.Base(name) == "energy_uj" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.MapFS.Open(name)
}

func (d denyFS) ReadFile(name string) ([]byte, error) { return fs.ReadFile(fsOnly{d}, name) }

// fsOnly hides ReadFile so fs.ReadFile goes through Open.
type fsOnly struct{ fs.FS }

func TestPermissionDenied(t *testing.T) {
	m := NewMeter(denyFS{fakeTree()})
	ok, reason, err := m.Status()
	if ok || reason != ReasonPermissionDenied || err == nil {
		t.Fatalf("status %v %q %v, want %q", ok, reason, err, ReasonPermissionDenied)
	}
	for _, r := range m.Readings() {
		if r.OK() || r.Reason != ReasonPermissionDenied {
			t.Errorf("zone %s: %+v, want no value and reason %q", r.ID, r, ReasonPermissionDenied)
		}
	}
	if got := Explain(reason); got == "" || got == reason {
		t.Errorf("no explanation for %q", reason)
	}
}

// TestRealDirectory reads a tree on disk through os.DirFS, as the exporter
// does with --host.powercap-path.
func TestRealDirectory(t *testing.T) {
	dir := t.TempDir()
	for name, f := range fakeTree() {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMeter(os.DirFS(dir))
	if err := os.WriteFile(filepath.Join(dir, "intel-rapl:0:1", "energy_uj"), []byte("700000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Sample()
	if r := byID(t, m.Readings(), "intel-rapl:0:1"); r.Joules != 0.5 || r.Domain != "dram" {
		t.Errorf("dram %+v, want 0.5 J", r)
	}
}

func byID(t *testing.T, rs []Reading, id string) Reading {
	t.Helper()
	for _, r := range rs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no zone %s in %+v", id, rs)
	return Reading{}
}
