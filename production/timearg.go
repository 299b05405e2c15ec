package production

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// ParseTime reads a range bound (--from, --to): RFC 3339, unix seconds,
// "now" or "now-DURATION" (Prometheus durations: 90m, 1d, 1h30m).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := model.ParseDuration(rest)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", s, err)
		}
		return now.Add(-time.Duration(d)), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Unix(0, int64(f*1e9)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339, unix seconds or now-DURATION", s)
	}
	return t, nil
}
