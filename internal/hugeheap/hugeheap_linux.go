package hugeheap

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// advise allocates size bytes (a large object, page aligned, fresh from
// the OS so never written), advises them and returns their range; the
// allocation is garbage once it returns.
func advise(size int) (lo, hi uintptr, err error) {
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
