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

// TestAdviseMarksRange: the range advise reserves carries the kernel's
// huge-page advice (VmFlags "hg" in /proc/self/smaps) from end to end, and
// a heap range of the same size allocated without it does not.
func TestAdviseMarksRange(t *testing.T) {
	const size = 64 << 20
	plain := make([]byte, size)
	plainLo := uintptr(unsafe.Pointer(unsafe.SliceData(plain)))
	lo, hi, err := advise(size)
	if errors.Is(err, ErrUnsupported) {
		noHugePages(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if hi-lo != size {
		t.Fatalf("advised %d bytes, want %d", hi-lo, size)
	}
	if !allAdvised(t, lo, hi) {
		t.Errorf("the advised range %#x-%#x is not all marked hg", lo, hi)
	}
	if allAdvised(t, plainLo, plainLo+size) {
		t.Errorf("a range never advised (%#x) is marked hg: the check cannot tell", plainLo)
	}
	runtime.KeepAlive(plain)
}

// TestAdviseFrees: in a fresh process, as joulemark analyze run calls it,
// Advise leaves no reservation live (the next cycle's goal would count
// it), a second call reserves nothing, and the heap's next large
// allocations land in the advised range.
func TestAdviseFrees(t *testing.T) {
	if os.Getenv(envChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestAdviseFrees$", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		} else if testing.Verbose() {
			t.Logf("child:\n%s", out)
		}
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
		if !allAdvised(t, at, at+uintptr(n)) {
			t.Errorf("a %d-byte allocation at %#x is not in the advised range", n, at)
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
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
		lo, _, err := advise(8 << 20)
		overcommitPath = was
		if asked := lo != 0; asked != c.asks || !c.asks && !errors.Is(err, ErrUnsupported) {
			t.Errorf("overcommit policy %q: reserved %v (%v), want %v", strings.TrimSpace(c.policy), asked, err, c.asks)
		}
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

// envChild marks TestAdviseFrees' own process.
const envChild = "HUGEHEAP_TEST_CHILD"

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
