package fakeclock

import (
	"sync"
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	c := New()
	if !c.Now().Equal(Start) {
		t.Fatalf("New() at %v, want %v", c.Now(), Start)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now().Sub(Start), 400*time.Millisecond; got != want {
		t.Errorf("advanced %v, want %v", got, want)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := At(at).Now(); !got.Equal(at) {
		t.Errorf("At(%v).Now() = %v", at, got)
	}
}
