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

// cmpFormalReqs is cmpFormal of requests i and j of reqs.
func cmpFormalReqs(reqs []Request, i, j int32) int {
	a, b := &reqs[i], &reqs[j]
	if c := cmp.Compare(a.End, b.End); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Send, b.Send); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Slot, b.Slot); c != 0 {
		return c
	}
	return cmp.Compare(i, j)
}

// maxMergeRuns is the most ascending runs sortFormal merges; keys in more
// runs are sorted.
const maxMergeRuns = 1024

// sortFormal writes the indexes idx (into reqs, ascending) to out (as long)
// in cmpFormal order. The loader delivers each series' requests (one
// series per phase and slot) in completion order, so idx is a few
// ascending runs: those are merged through a heap, O(n log runs)
// comparisons instead of a sort's O(n log n), each run read in place (in
// memory order, so without keys). Indexes in more than maxMergeRuns runs
// are sorted through compact keys (far fewer cache misses than sorting
// indexes into reqs). The order is total, so both give the same result.
func sortFormal(reqs []Request, idx, out []int32) {
	type run struct{ pos, end int }
	var runs []run
	for k := range idx {
		if k == 0 || cmpFormalReqs(reqs, idx[k-1], idx[k]) > 0 {
			if len(runs) == maxMergeRuns {
				sortFormalKeys(reqs, idx, out)
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
	runs[len(runs)-1].end = len(idx)
	less := func(x, y int) bool { return cmpFormalReqs(reqs, idx[runs[x].pos], idx[runs[y].pos]) < 0 }
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
		out[k] = idx[runs[0].pos]
		runs[0].pos++
		if runs[0].pos == runs[0].end {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
		}
		down(0)
	}
}

// sortFormalKeys is sortFormal by sorting compact keys.
func sortFormalKeys(reqs []Request, idx, out []int32) {
	keys := make([]formalKey, len(idx))
	for k, i := range idx {
		keys[k] = formalKey{reqs[i].End, reqs[i].Send, reqs[i].Slot, int(i)}
	}
	slices.SortFunc(keys, func(a, b formalKey) int { return cmpFormal(&a, &b) })
	for k := range keys {
		out[k] = int32(keys[k].i)
	}
}
