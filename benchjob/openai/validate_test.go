package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                        0,
		"1":                       time.Second,
		" 7":                      7 * time.Second,
		"120":                     MaxRetryAfter,
		"99999999999999999999999": 0, // not a uint64: not a date either
		"-1":                      0,
		"soon":                    0,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):      0,
		now.Add(time.Hour).Format(http.TimeFormat):       MaxRetryAfter,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}
