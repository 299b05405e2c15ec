package demo

import (
	"slices"
	"testing"
)

// TestLayoutAndGPUList: the demo node's GPUs per pod, and how the header
// names the benchmarked engine's GPUs.
func TestLayoutAndGPUList(t *testing.T) {
	for _, c := range []struct {
		gpus                  int
		engine, serving, idle []int
		list                  string
	}{
		{8, []int{0, 1, 2, 3, 4}, []int{5}, []int{6}, "0-4"},
		{4, []int{0, 1}, nil, []int{2}, "0,1"},
		{1, []int{0}, nil, nil, "0"},
	} {
		l := newLayout(c.gpus)
		if !slices.Equal(l.engine, c.engine) || !slices.Equal(l.serving, c.serving) || !slices.Equal(l.idle, c.idle) {
			t.Errorf("%d GPUs: layout %+v", c.gpus, l)
		}
		if got := gpuList(l.engine); got != c.list {
			t.Errorf("%d GPUs: engine GPUs %q, want %q", c.gpus, got, c.list)
		}
	}
	if got := gpuList([]int{0, 2, 3}); got != "0,2,3" {
		t.Errorf("gapped list %q", got)
	}
}
