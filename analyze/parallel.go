package analyze

import (
	"runtime"
	"sync"
)

// eachIndex calls f(0) … f(n−1) on up to GOMAXPROCS goroutines and returns
// when every call has; f must write only what index i owns.
func eachIndex(n int, f func(i int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	work := make(chan int)
	var g sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		g.Go(func() {
			for i := range work {
				f(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	g.Wait()
}
