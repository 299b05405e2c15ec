package analyze

import (
	"cmp"
	"slices"
)

// formalKey is a formal request's place in completion order: end, then
// send, slot and index into RunData.Requests (a total order).
type formalKey struct {
	end, send float64
	slot      string
	i         int
}

func cmpFormal(a, b *formalKey) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	if c := cmp.Compare(a.send, b.send); c != 0 {
		return c
	}
	if c := cmp.Compare(a.slot, b.slot); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// maxMergeRuns is the most ascending runs sortFormal merges; keys in more
// runs are sorted.
const maxMergeRuns = 1024

// sortFormal writes the keys' indexes to out (len(keys) long) in cmpFormal
// order. The loader delivers each series' requests (one series per phase
// and slot) in completion order, so the keys are a few ascending runs:
// those are merged through a heap, O(n log runs) comparisons instead of a
// sort's O(n log n). Keys in more than maxMergeRuns runs are sorted. The
// order is total, so both give the same result.
func sortFormal(keys []formalKey, out []int) {
	type run struct{ pos, end int }
	var runs []run
	for k := range keys {
		if k == 0 || cmpFormal(&keys[k-1], &keys[k]) > 0 {
			if len(runs) == maxMergeRuns {
				slices.SortFunc(keys, func(a, b formalKey) int { return cmpFormal(&a, &b) })
				for k := range keys {
					out[k] = keys[k].i
				}
				return
			}
			if len(runs) > 0 {
				runs[len(runs)-1].end = k
			}
			runs = append(runs, run{pos: k})
		}
	}
	if len(runs) == 0 {
		return
	}
	runs[len(runs)-1].end = len(keys)
	less := func(x, y int) bool { return cmpFormal(&keys[runs[x].pos], &keys[runs[y].pos]) < 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(runs) {
				return
			}
			if r := l + 1; r < len(runs) && less(r, l) {
				l = r
			}
			if !less(l, i) {
				return
			}
			runs[i], runs[l] = runs[l], runs[i]
			i = l
		}
	}
	for i := len(runs)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for k := range out {
		out[k] = keys[runs[0].pos].i
		runs[0].pos++
		if runs[0].pos == runs[0].end {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
		}
		down(0)
	}
}
