// Command pagefaults measures what a process pays on this machine for
// memory it touches for the first time: 256 MiB written a byte per 4 KiB
// page, from the Go heap, from a fresh anonymous mapping, and from one
// advised for transparent huge pages (MADV_HUGEPAGE), each with its wall
// time per 4 KiB page, minor faults and system CPU. docs/analyze.md
// ("Scale (measured)") quotes it: the analysis' cost at 1M requests
// follows its peak RSS.
//
//	go run ./analyze/testdata/pagefaults
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

const size = 256 << 20

func main() {
	for _, way := range []string{"go heap", "mmap", "mmap, huge pages"} {
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		b, err := fresh(way)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pagefaults:", err)
			os.Exit(1)
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		wall := time.Since(start)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		sys := time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
		fmt.Printf("%-17s %6.2f µs/page  %6d minor faults  %v wall  %v system CPU\n",
			way, float64(wall.Microseconds())/float64(size/4096), ru1.Minflt-ru0.Minflt, wall.Round(time.Millisecond), sys.Round(time.Millisecond))
	}
}

// fresh returns size bytes of memory never touched, the way named.
func fresh(way string) ([]byte, error) {
	if way == "go heap" {
		return make([]byte, size), nil
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if way == "mmap, huge pages" {
		if err := syscall.Madvise(b, syscall.MADV_HUGEPAGE); err != nil {
			return nil, fmt.Errorf("madvise: %w", err)
		}
	}
	return b, nil
}
