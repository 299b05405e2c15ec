// Package hugeheap asks the kernel to back part of the Go heap with
// transparent huge pages. A process that builds a few hundred megabytes of
// fresh arrays (joulemark analyze run) otherwise takes one page fault per
// 4 KiB the first time each page is written; on a virtual machine each
// such fault costs about 10 µs, a quarter of the analysis' CPU at 1M
// requests. Where the kernel's transparent huge pages are "madvise" (the
// default of most distributions), only memory the process advises gets
// them, and the Go runtime advises none of its heap.
package hugeheap

import (
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
)

// ErrUnsupported is Advise's error where it does not ask: no transparent
// huge pages on this platform, a 32-bit address space, or strict
// overcommit accounting.
var ErrUnsupported = errors.New("no transparent huge pages for the heap here")

// Advise reserves size bytes of address space in the Go heap, asks the
// kernel to back them with transparent huge pages (madvise MADV_HUGEPAGE:
// a page fault there maps 2 MiB at once), and frees them. The runtime
// hands out freed heap lowest address first, so the heap's next large
// allocations reuse that range, advice and all: it lasts as long as the
// mapping, which the runtime never remaps. The reservation is made in
// pieces, so that the runtime zeroes only those that land where the heap
// was used before: the rest is never written and costs no resident
// memory. size is capped at the runtime's memory limit. It returns ErrUnsupported, or the kernel's
// error, when it could not advise; the heap then works as before. Only
// the first call with a size reserves (a reservation made again would be
// zeroed, every page written); later ones return its error.
func Advise(size int64) error {
	size = min(size, debug.SetMemoryLimit(-1))
	if size <= 0 {
		return nil
	}
	first.Lock()
	defer first.Unlock()
	if !first.done {
		first.done = true
		_, first.err = advise(int(size))
		// Collect the reservation now: left for the next cycle, it would
		// set that cycle's goal as if it were live.
		runtime.GC()
	}
	return first.err
}

// first is Advise's first call with a size: done, and its error.
var first struct {
	sync.Mutex
	done bool
	err  error
}
