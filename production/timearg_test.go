package production

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"now", now},
		{"now-24h", now.Add(-24 * time.Hour)},
		{"now-1d", now.Add(-24 * time.Hour)},
		{"now-1h30m", now.Add(-90 * time.Minute)},
		{"1700000000.5", time.Unix(1700000000, 5e8)},
		{"2025-06-01T12:00:00Z", time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)},
	} {
		got, err := ParseTime(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "now-", "now-5x", "2025-06-01", "now+1h"} {
		if _, err := ParseTime(bad, now); err == nil {
			t.Errorf("ParseTime(%q): no error", bad)
		}
	}
}
