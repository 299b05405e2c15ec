package analyze

// GCPercent is the garbage collector's target joulemark analyze run runs
// with (debug.SetGCPercent, as GOGC) unless GOGC is set: a collection when
// the heap has grown by this percentage since the last one. Its working
// set is large pointer-free arrays (requests, sample series, sort keys),
// which a collection marks in milliseconds, so collecting at 30% growth
// rather than Go's 100% keeps the peak memory near the live data for a
// few percent more CPU (docs/analyze.md, "Scale (measured)"). analyze
// production keeps Go's 100: its maps cost a collection more.
const GCPercent = 30

// HugePageHeap is the part of the Go heap joulemark analyze run asks the
// kernel to back with transparent huge pages (--huge-pages; hugeheap.Advise):
// the analysis of 1M requests peaks near 300 MB, and each 4 KiB page
// fault it no longer takes saves about 10 µs of CPU on a virtual machine
// (docs/analyze.md, "Scale (measured)").
const HugePageHeap = 512 << 20
