// Code derived from the Go standard library's slices/zsortanyfunc.go and
// slices/sort.go (Go 1.26), specialised to the attribution's events.
//
// Copyright 2022 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package analyze

import "math/bits"

// sortEvents sorts events by time, then kind (send, first token, end),
// exactly as slices.SortFunc(evs, cmpEvents) would, element for element:
// the same pattern-defeating quicksort making the same comparisons, with
// the comparison inlined instead of called through a function value
// (about twice as fast on millions of events). Events equal under
// cmpEvents keep the order slices.SortFunc leaves them in, so the
// attribution's sums are the same to the last bit.
func sortEvents(x []event) {
	n := len(x)
	pdqsortEvents(x, 0, n, bits.Len(uint(n)))
}

// cmpEvents orders events by time, then kind.
func cmpEvents(a, b event) int {
	at, bt := a.t(), b.t()
	if at < bt {
		return -1
	}
	if at > bt {
		return 1
	}
	return int(a.kind()) - int(b.kind()) // send, first token, end
}

type evSortedHint int // hint for pdqsort when choosing the pivot

const (
	evUnknownHint evSortedHint = iota
	evIncreasingHint
	evDecreasingHint
)

// evXorshift paper: https://www.jstatsoft.org/article/view/v008i14/xorshift.pdf
type evXorshift uint64

func (r *evXorshift) Next() uint64 {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return uint64(*r)
}

func evNextPowerOfTwo(length int) uint {
	return 1 << bits.Len(uint(length))
}

// insertionSortEvents sorts data[a:b] using insertion sort.
func insertionSortEvents(data []event, a, b int) {
	for i := a + 1; i < b; i++ {
		for j := i; j > a && (cmpEvents(data[j], data[j-1]) < 0); j-- {
			data[j], data[j-1] = data[j-1], data[j]
		}
	}
}

// siftDownEvents implements the heap property on data[lo:hi].
// first is an offset into the array where the root of the heap lies.
func siftDownEvents(data []event, lo, hi, first int) {
	root := lo
	for {
		child := 2*root + 1
		if child >= hi {
			break
		}
		if child+1 < hi && (cmpEvents(data[first+child], data[first+child+1]) < 0) {
			child++
		}
		if !(cmpEvents(data[first+root], data[first+child]) < 0) {
			return
		}
		data[first+root], data[first+child] = data[first+child], data[first+root]
		root = child
	}
}

func heapSortEvents(data []event, a, b int) {
	first := a
	lo := 0
	hi := b - a

	// Build heap with greatest element at top.
	for i := (hi - 1) / 2; i >= 0; i-- {
		siftDownEvents(data, i, hi, first)
	}

	// Pop elements, largest first, into end of data.
	for i := hi - 1; i >= 0; i-- {
		data[first], data[first+i] = data[first+i], data[first]
		siftDownEvents(data, lo, i, first)
	}
}

// pdqsortEvents sorts data[a:b].
// The algorithm based on pattern-defeating quicksort(pdqsort), but without the optimizations from BlockQuicksort.
// pdqsort paper: https://arxiv.org/pdf/2106.05123.pdf
// C++ implementation: https://github.com/orlp/pdqsort
// Rust implementation: https://docs.rs/pdqsort/latest/pdqsort/
// limit is the number of allowed bad (very unbalanced) pivots before falling back to heapsort.
func pdqsortEvents(data []event, a, b, limit int) {
	const maxInsertion = 12

	var (
		wasBalanced    = true // whether the last partitioning was reasonably balanced
		wasPartitioned = true // whether the slice was already partitioned
	)

	for {
		length := b - a

		if length <= maxInsertion {
			insertionSortEvents(data, a, b)
			return
		}

		// Fall back to heapsort if too many bad choices were made.
		if limit == 0 {
			heapSortEvents(data, a, b)
			return
		}

		// If the last partitioning was imbalanced, we need to breaking patterns.
		if !wasBalanced {
			breakPatternsEvents(data, a, b)
			limit--
		}

		pivot, hint := choosePivotEvents(data, a, b)
		if hint == evDecreasingHint {
			reverseRangeEvents(data, a, b)
			// The chosen pivot was pivot-a elements after the start of the array.
			// After reversing it is pivot-a elements before the end of the array.
			// The idea came from Rust's implementation.
			pivot = (b - 1) - (pivot - a)
			hint = evIncreasingHint
		}

		// The slice is likely already sorted.
		if wasBalanced && wasPartitioned && hint == evIncreasingHint {
			if partialInsertionSortEvents(data, a, b) {
				return
			}
		}

		// Probably the slice contains many duplicate elements, partition the slice into
		// elements equal to and elements greater than the pivot.
		if a > 0 && !(cmpEvents(data[a-1], data[pivot]) < 0) {
			mid := partitionEqualEvents(data, a, b, pivot)
			a = mid
			continue
		}

		mid, alreadyPartitioned := partitionEvents(data, a, b, pivot)
		wasPartitioned = alreadyPartitioned

		leftLen, rightLen := mid-a, b-mid
		balanceThreshold := length / 8
		if leftLen < rightLen {
			wasBalanced = leftLen >= balanceThreshold
			pdqsortEvents(data, a, mid, limit)
			a = mid + 1
		} else {
			wasBalanced = rightLen >= balanceThreshold
			pdqsortEvents(data, mid+1, b, limit)
			b = mid
		}
	}
}

// partitionEvents does one quicksort partition.
// Let p = data[pivot]
// Moves elements in data[a:b] around, so that data[i]<p and data[j]>=p for i<newpivot and j>newpivot.
// On return, data[newpivot] = p
func partitionEvents(data []event, a, b, pivot int) (newpivot int, alreadyPartitioned bool) {
	data[a], data[pivot] = data[pivot], data[a]
	i, j := a+1, b-1 // i and j are inclusive of the elements remaining to be partitioned

	for i <= j && (cmpEvents(data[i], data[a]) < 0) {
		i++
	}
	for i <= j && !(cmpEvents(data[j], data[a]) < 0) {
		j--
	}
	if i > j {
		data[j], data[a] = data[a], data[j]
		return j, true
	}
	data[i], data[j] = data[j], data[i]
	i++
	j--

	for {
		for i <= j && (cmpEvents(data[i], data[a]) < 0) {
			i++
		}
		for i <= j && !(cmpEvents(data[j], data[a]) < 0) {
			j--
		}
		if i > j {
			break
		}
		data[i], data[j] = data[j], data[i]
		i++
		j--
	}
	data[j], data[a] = data[a], data[j]
	return j, false
}

// partitionEqualEvents partitions data[a:b] into elements equal to data[pivot] followed by elements greater than data[pivot].
// It assumed that data[a:b] does not contain elements smaller than the data[pivot].
func partitionEqualEvents(data []event, a, b, pivot int) (newpivot int) {
	data[a], data[pivot] = data[pivot], data[a]
	i, j := a+1, b-1 // i and j are inclusive of the elements remaining to be partitioned

	for {
		for i <= j && !(cmpEvents(data[a], data[i]) < 0) {
			i++
		}
		for i <= j && (cmpEvents(data[a], data[j]) < 0) {
			j--
		}
		if i > j {
			break
		}
		data[i], data[j] = data[j], data[i]
		i++
		j--
	}
	return i
}

// partialInsertionSortEvents partially sorts a slice, returns true if the slice is sorted at the end.
func partialInsertionSortEvents(data []event, a, b int) bool {
	const (
		maxSteps         = 5  // maximum number of adjacent out-of-order pairs that will get shifted
		shortestShifting = 50 // don't shift any elements on short arrays
	)
	i := a + 1
	for j := 0; j < maxSteps; j++ {
		for i < b && !(cmpEvents(data[i], data[i-1]) < 0) {
			i++
		}

		if i == b {
			return true
		}

		if b-a < shortestShifting {
			return false
		}

		data[i], data[i-1] = data[i-1], data[i]

		// Shift the smaller one to the left.
		if i-a >= 2 {
			for j := i - 1; j >= 1; j-- {
				if !(cmpEvents(data[j], data[j-1]) < 0) {
					break
				}
				data[j], data[j-1] = data[j-1], data[j]
			}
		}
		// Shift the greater one to the right.
		if b-i >= 2 {
			for j := i + 1; j < b; j++ {
				if !(cmpEvents(data[j], data[j-1]) < 0) {
					break
				}
				data[j], data[j-1] = data[j-1], data[j]
			}
		}
	}
	return false
}

// breakPatternsEvents scatters some elements around in an attempt to break some patterns
// that might cause imbalanced partitions in quicksort.
func breakPatternsEvents(data []event, a, b int) {
	length := b - a
	if length >= 8 {
		random := evXorshift(length)
		modulus := evNextPowerOfTwo(length)

		for idx := a + (length/4)*2 - 1; idx <= a+(length/4)*2+1; idx++ {
			other := int(uint(random.Next()) & (modulus - 1))
			if other >= length {
				other -= length
			}
			data[idx], data[a+other] = data[a+other], data[idx]
		}
	}
}

// choosePivotEvents chooses a pivot in data[a:b].
//
// [0,8): chooses a static pivot.
// [8,shortestNinther): uses the simple median-of-three method.
// [shortestNinther,∞): uses the Tukey ninther method.
func choosePivotEvents(data []event, a, b int) (pivot int, hint evSortedHint) {
	const (
		shortestNinther = 50
		maxSwaps        = 4 * 3
	)

	l := b - a

	var (
		swaps int
		i     = a + l/4*1
		j     = a + l/4*2
		k     = a + l/4*3
	)

	if l >= 8 {
		if l >= shortestNinther {
			// Tukey ninther method, the idea came from Rust's implementation.
			i = medianAdjacentEvents(data, i, &swaps)
			j = medianAdjacentEvents(data, j, &swaps)
			k = medianAdjacentEvents(data, k, &swaps)
		}
		// Find the median among i, j, k and stores it into j.
		j = medianEvents(data, i, j, k, &swaps)
	}

	switch swaps {
	case 0:
		return j, evIncreasingHint
	case maxSwaps:
		return j, evDecreasingHint
	default:
		return j, evUnknownHint
	}
}

// order2Events returns x,y where data[x] <= data[y], where x,y=a,b or x,y=b,a.
func order2Events(data []event, a, b int, swaps *int) (int, int) {
	if cmpEvents(data[b], data[a]) < 0 {
		*swaps++
		return b, a
	}
	return a, b
}

// medianEvents returns x where data[x] is the median of data[a],data[b],data[c], where x is a, b, or c.
func medianEvents(data []event, a, b, c int, swaps *int) int {
	a, b = order2Events(data, a, b, swaps)
	b, _ = order2Events(data, b, c, swaps)
	_, b = order2Events(data, a, b, swaps)
	return b
}

// medianAdjacentEvents finds the median of data[a - 1], data[a], data[a + 1] and stores the index into a.
func medianAdjacentEvents(data []event, a int, swaps *int) int {
	return medianEvents(data, a-1, a, a+1, swaps)
}

func reverseRangeEvents(data []event, a, b int) {
	i := a
	j := b - 1
	for i < j {
		data[i], data[j] = data[j], data[i]
		i++
		j--
	}
}
