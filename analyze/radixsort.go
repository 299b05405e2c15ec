package analyze

import (
	"math"
	"slices"
)

// radixSortBy sorts v by key, stably: a least-significant-digit radix sort,
// one pass per byte of the key that differs among the elements (bytes that
// all keys share cost nothing but the histogram), through buf (len(v)
// elements; allocated when shorter). It is the O(n) replacement for the
// comparison sorts of a million values: stable, so a sort by several keys
// is one radixSortBy per key, least significant first.
func radixSortBy[T any](v, buf []T, key func(T) uint64) {
	n := len(v)
	if n < 2 {
		return
	}
	var counts [8][256]int
	for _, x := range v {
		k := key(x)
		for d := range counts {
			counts[d][byte(k>>(8*d))]++
		}
	}
	if len(buf) < n {
		buf = make([]T, n)
	}
	src, dst := v, buf[:n]
	first := key(v[0])
	for d := range counts {
		c := &counts[d]
		if c[byte(first>>(8*d))] == n {
			continue // every key has this byte
		}
		at := 0
		for b := range c {
			at, c[b] = at+c[b], at
		}
		shift := uint(8 * d)
		for _, x := range src {
			b := byte(key(x) >> shift)
			dst[c[b]] = x
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &v[0] {
		copy(v, src)
	}
}

// floatKey maps x to a key whose unsigned order is cmp.Compare's order of
// float64s: NaN first (all alike), −0 and +0 alike.
func floatKey(x float64) uint64 {
	if x != x {
		return 0
	}
	if x == 0 {
		x = 0 // −0 to +0
	}
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// radixSortFloats sorts v as slices.Sort does, the same values in the same
// places: by radix with a buffer of len(v) floats, or by slices.Sort when
// v is short or holds a NaN or −0 (whose order among equals slices.Sort
// leaves to its algorithm).
func radixSortFloats(v []float64) {
	if len(v) < radixMin || slices.ContainsFunc(v, func(x float64) bool { return x != x || x == 0 && math.Signbit(x) }) {
		slices.Sort(v)
		return
	}
	radixSortBy(v, nil, floatKey)
}

// radixMin is the shortest slice radixSortFloats sorts by radix: below it the
// histogram costs more than the comparisons.
const radixMin = 1 << 10
