package hugeheap

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// TestAdviseMarksRange: the ranges advise reserves carry the kernel's
// huge-page advice (VmFlags "hg" in /proc/self/smaps) from end to end and
// add up to the size asked for, and a heap range of the same size
// allocated without it does not carry it.
func TestAdviseMarksRange(t *testing.T) {
	const size = 64 << 20
	plain := make([]byte, size)
	plainLo := uintptr(unsafe.Pointer(unsafe.SliceData(plain)))
	ranges, err := advise(size)
	if errors.Is(err, ErrUnsupported) {
		noHugePages(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	total := uintptr(0)
	for _, r := range ranges {
		total += r.hi - r.lo
		if !allAdvised(t, r.lo, r.hi) {
			t.Errorf("the advised range %#x-%#x is not all marked hg", r.lo, r.hi)
		}
	}
	if total < size {
		t.Errorf("advised %d bytes in %d ranges, want at least %d", total, len(ranges), size)
	}
	if allAdvised(t, plainLo, plainLo+size) {
		t.Errorf("a range never advised (%#x) is marked hg: the check cannot tell", plainLo)
	}
	runtime.KeepAlive(plain)
}

// TestAdviseFrees: in a fresh process, as joulemark analyze run calls it,
// Advise leaves no reservation live (the next cycle's goal would count
// it), a second call reserves nothing, and the heap's next large
// allocations land in the advised range (but for a first huge page's
// worth).
func TestAdviseFrees(t *testing.T) {
	if !inChild(t) {
		return
	}
	const size = 256 << 20
	if err := Advise(size); errors.Is(err, ErrUnsupported) {
		noHugePages(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if live, goal := s[0].Value.Uint64(), s[1].Value.Uint64(); live > size/4 || goal > size/4 {
		t.Errorf("after Advise: %d bytes live, the next collection at %d: want the reservation freed and not counted", live, goal)
	}
	s = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	allocs := s[0].Value.Uint64()
	if err := Advise(size); err != nil {
		t.Fatalf("a second Advise: %v", err)
	}
	metrics.Read(s)
	if n := s[0].Value.Uint64() - allocs; n > size/4 {
		t.Errorf("a second Advise allocated %d bytes, want it to reserve nothing", n)
	}
	var keep [][]byte
	for _, n := range []int{100 << 20, 64 << 20, 16 << 20} {
		b := make([]byte, n)
		at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		// It may begin in a free run just below the range.
		if !allAdvised(t, at+hugePage, at+uintptr(n)) {
			t.Errorf("a %d-byte allocation at %#x is not in the advised range", n, at)
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
}

// TestAdviseWritesNothing: in a fresh process whose heap has freed memory
// below the fresh (as after the start-up's first collections), Advise
// does not write its reservation: the runtime would zero a single
// allocation of it that began on the freed memory, every page of it
// faulted in.
func TestAdviseWritesNothing(t *testing.T) {
	if !inChild(t) {
		return
	}
	b := make([]byte, 8<<20)
	for i := range b {
		b[i] = 1
	}
	b = nil
	runtime.GC()
	before := residentBytes(t)
	if err := Advise(256 << 20); errors.Is(err, ErrUnsupported) {
		noHugePages(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	if grew := residentBytes(t) - before; grew > 32<<20 {
		t.Errorf("Advise(256 MiB) made %d MiB resident, want it to write (almost) nothing", grew>>20)
	}
}

// TestAdviseStrictOvercommit: under strict overcommit accounting Advise
// reserves nothing (the runtime would abort if the reservation failed).
func TestAdviseStrictOvercommit(t *testing.T) {
	for _, c := range []struct {
		policy string
		asks   bool
	}{{"2\n", false}, {"0\n", true}, {"1\n", true}} {
		path := filepath.Join(t.TempDir(), "overcommit_memory")
		if err := os.WriteFile(path, []byte(c.policy), 0o600); err != nil {
			t.Fatal(err)
		}
		was := overcommitPath
		overcommitPath = path
		ranges, err := advise(8 << 20)
		overcommitPath = was
		if asked := len(ranges) > 0; asked != c.asks || !c.asks && !errors.Is(err, ErrUnsupported) {
			t.Errorf("overcommit policy %q: reserved %v (%v), want %v", strings.TrimSpace(c.policy), asked, err, c.asks)
		}
	}
}

// TestContiguous: the pieces' ranges, lowest first, neighbours and those
// less than a piece apart merged.
func TestContiguous(t *testing.T) {
	const k = piece / 4
	buf := make([]byte, 20*k)
	at := func(from, to int) []byte { return buf[from*k : to*k : to*k] }
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	got := contiguous([][]byte{at(15, 17), at(0, 2), at(2, 4), at(17, 20), at(6, 8)})
	want := []addrRange{{base, base + 8*k}, {base + 15*k, base + 20*k}}
	if !slices.Equal(got, want) {
		t.Errorf("contiguous: %v, want %v", got, want)
	}
}

// noHugePages ends a test on a kernel without transparent huge pages:
// skipped here, failed in CI, whose machines have them.
func noHugePages(t *testing.T, err error) {
	t.Helper()
	if testenv.InCI() {
		t.Fatalf("CI=true and no transparent huge pages: %v", err)
	}
	t.Skipf("this kernel has no transparent huge pages: %v", err)
}

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// envChild marks a test's own process (inChild).
const envChild = "HUGEHEAP_TEST_CHILD"

// inChild runs the calling test again in a process of its own, whose
// heap nothing else has used, and says whether this is that process.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envChild) != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("child:\n%s", out)
	}
	return false
}

// residentBytes is the process' resident memory (Rss of
// /proc/self/smaps_rollup).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("smaps_rollup %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("smaps_rollup has no Rss")
	return 0
}

// allAdvised says whether every mapping overlapping [lo, hi) carries the
// huge-page advice, and fails the test when none does.
func allAdvised(t *testing.T, lo, hi uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var overlaps, advised int
	var in bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if from, to, ok := mappingRange(line); ok {
			in = from < hi && to > lo
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			overlaps++
			if slices.Contains(strings.Fields(rest), "hg") {
				advised++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if overlaps == 0 {
		t.Fatalf("no mapping overlaps %#x-%#x", lo, hi)
	}
	return advised == overlaps
}

// mappingRange parses an smaps header line ("start-end perms ...").
func mappingRange(line string) (from, to uintptr, ok bool) {
	r, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
