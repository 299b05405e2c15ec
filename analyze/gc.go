package analyze

// GCPercent is the garbage collector's target joulemark's analyses run
// with (debug.SetGCPercent, as GOGC) unless GOGC is set: a collection when
// the heap has grown by this percentage since the last one. Their working
// set is large pointer-free arrays (requests, sample series, sort keys),
// which a collection marks in milliseconds, so collecting at 30% growth
// rather than Go's 100% keeps the peak memory near the live data for no
// measurable CPU (docs/analyze.md, "Memory at the peak").
const GCPercent = 30
