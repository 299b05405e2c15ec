package analyze

import (
	"math"
	"math/bits"
	"slices"
)

// radixSortBy sorts v by key in place, equal keys in no set order: a
// most-significant-digit radix sort (American flag sort), one
// permutation per byte of the key where the elements differ, no buffer.
// It replaces the comparison sorts of a million values (O(n) per
// distinct byte instead of O(n log n) comparisons); a caller that needs
// an order among equal keys sorts their runs afterwards (sortRuns).
// Keys already in order (the requests' ends as the loader lists them)
// cost one pass.
func radixSortBy[T any](v []T, key func(T) uint64) {
	if keysSorted(v, key) {
		return
	}
	radixSortDigit(v, key, 56)
}

// keysSorted says whether v's keys never decrease; it stops at the first
// that does.
func keysSorted[T any](v []T, key func(T) uint64) bool {
	for i := 1; i < len(v); i++ {
		if key(v[i]) < key(v[i-1]) {
			return false
		}
	}
	return true
}

// radixSmall is the longest slice radixSortDigit sorts by insertion.
const radixSmall = 24

func radixSortDigit[T any](v []T, key func(T) uint64, shift uint) {
	for len(v) > radixSmall {
		// One pass counts this byte and finds the bits where any key
		// differs from the first: when every key has this byte, the next
		// byte to sort by is the highest one that differs, not the next.
		var count [256]int
		k0 := key(v[0])
		diff := uint64(0)
		for _, x := range v {
			k := key(x)
			count[byte(k>>shift)]++
			diff |= k ^ k0
		}
		if count[byte(k0>>shift)] == len(v) { // every key has this byte
			diff &= 1<<shift - 1 // the bytes below it
			if diff == 0 {
				return
			}
			shift = uint(63-bits.LeadingZeros64(diff)) &^ 7
			continue
		}
		var head, tail [256]int
		at := 0
		for b, c := range count {
			head[b], tail[b] = at, at+c
			at += c
		}
		for b := range head {
			for head[b] < tail[b] {
				x := v[head[b]]
				for d := byte(key(x) >> shift); int(d) != b; d = byte(key(x) >> shift) {
					x, v[head[d]] = v[head[d]], x
					head[d]++
				}
				v[head[b]] = x
				head[b]++
			}
		}
		if shift == 0 {
			return
		}
		lo := 0
		for _, c := range count {
			if c > 1 {
				radixSortDigit(v[lo:lo+c], key, shift-8)
			}
			lo += c
		}
		return
	}
	for i := 1; i < len(v); i++ {
		x, k := v[i], key(v[i])
		j := i
		for ; j > 0 && key(v[j-1]) > k; j-- {
			v[j] = v[j-1]
		}
		v[j] = x
	}
}

// sortRuns sorts each run of v whose elements are alike (same(a, b) for
// neighbours a, b) by cmp: the ties a sort by one key leaves.
func sortRuns[T any](v []T, same func(a, b T) bool, cmp func(a, b T) int) {
	for lo := 0; lo < len(v); {
		hi := lo + 1
		for hi < len(v) && same(v[lo], v[hi]) {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(v[lo:hi], cmp)
		}
		lo = hi
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
	return orderKey(x)
}

// orderKey maps x to a key whose unsigned order is the order of float64s
// other than NaN, −0 before +0; fromOrderKey inverts it.
func orderKey(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// fromOrderKey is the float64 whose orderKey is k.
func fromOrderKey(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// radixSortFloats sorts v as slices.Sort does, the same values in the same
// places: by radix, or by slices.Sort when v holds a NaN or −0 (whose
// order among equals slices.Sort leaves to its algorithm).
func radixSortFloats(v []float64) {
	if slices.ContainsFunc(v, func(x float64) bool { return x != x || x == 0 && math.Signbit(x) }) {
		slices.Sort(v)
		return
	}
	radixSortBy(v, orderKey) // no NaN or −0: floatKey's order
}
