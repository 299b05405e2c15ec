package hugeheap

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// overcommitPath is the kernel's overcommit policy (a variable for tests).
var overcommitPath = "/proc/sys/vm/overcommit_memory"

// piece is the size of the reservation's allocations. The runtime zeroes
// a large allocation whole when any of it was used before (it cannot
// tell fresh pages from freed ones within an arena's used part), so one
// allocation of the whole size could be written end to end, every page
// faulted in; in pieces, only those that land on memory used before are.
const piece = 4 << 20

// addrRange is a range of addresses, [lo, hi).
type addrRange struct{ lo, hi uintptr }

// advise allocates size bytes in pieces (large objects, page aligned,
// fresh from the OS but for any that land where the heap was used
// before), advises the ranges they make up and returns those; the pieces
// are garbage once it returns.
func advise(size int) ([]addrRange, error) {
	// A 32-bit address space may not hold the reservation, and under
	// strict overcommit accounting (2) it is charged in full and may not
	// be had: the runtime would then abort, not return an error.
	if strconv.IntSize < 64 {
		return nil, fmt.Errorf("%w: a 32-bit address space", ErrUnsupported)
	}
	if p, err := os.ReadFile(overcommitPath); err == nil && strings.TrimSpace(string(p)) == "2" {
		return nil, fmt.Errorf("%w: vm.overcommit_memory is 2 (strict), where reserving address space can fail", ErrUnsupported)
	}
	pieces := make([][]byte, max(1, size/piece))
	for i := range pieces {
		pieces[i] = make([]byte, piece)
	}
	ranges := contiguous(pieces)
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.lo, r.hi-r.lo, unix.MADV_HUGEPAGE); errno != 0 {
			runtime.KeepAlive(pieces)
			if errno == unix.EINVAL {
				return ranges, fmt.Errorf("madvise MADV_HUGEPAGE: %w (%w)", ErrUnsupported, errno)
			}
			return ranges, fmt.Errorf("madvise MADV_HUGEPAGE: %w", errno)
		}
	}
	runtime.KeepAlive(pieces)
	return ranges, nil
}

// contiguous is the ranges the pieces make up, lowest first, each with
// the gaps shorter than a piece it spans: heap memory the runtime handed
// out while the pieces were allocated (a span of small objects between
// two of them), which the advice does no harm and which would otherwise
// split a huge page's worth on each side of it from the advised range.
func contiguous(pieces [][]byte) []addrRange {
	var rs []addrRange
	for _, p := range pieces {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
		rs = append(rs, addrRange{lo, lo + uintptr(len(p))})
	}
	slices.SortFunc(rs, func(a, b addrRange) int { return cmp.Compare(a.lo, b.lo) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo >= out[n-1].hi && r.lo-out[n-1].hi < piece {
			out[n-1].hi = r.hi
			continue
		}
		out = append(out, r)
	}
	return out
}
