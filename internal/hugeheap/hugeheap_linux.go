package hugeheap

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// overcommitPath is the kernel's overcommit policy (a variable for tests).
var overcommitPath = "/proc/sys/vm/overcommit_memory"

// advise allocates size bytes (a large object, page aligned, fresh from
// the OS so never written), advises them and returns their range; the
// allocation is garbage once it returns.
func advise(size int) (lo, hi uintptr, err error) {
	// A 32-bit address space may not hold the reservation, and under
	// strict overcommit accounting (2) it is charged in full and may not
	// be had: the runtime would then abort, not return an error.
	if strconv.IntSize < 64 {
		return 0, 0, fmt.Errorf("%w: a 32-bit address space", ErrUnsupported)
	}
	if p, err := os.ReadFile(overcommitPath); err == nil && strings.TrimSpace(string(p)) == "2" {
		return 0, 0, fmt.Errorf("%w: vm.overcommit_memory is 2 (strict), where reserving address space can fail", ErrUnsupported)
	}
	b := make([]byte, size)
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		if err == unix.EINVAL {
			return lo, lo + uintptr(size), fmt.Errorf("madvise MADV_HUGEPAGE: %w (%w)", ErrUnsupported, err)
		}
		return lo, lo + uintptr(size), fmt.Errorf("madvise MADV_HUGEPAGE: %w", err)
	}
	runtime.KeepAlive(b)
	return lo, lo + uintptr(size), nil
}
