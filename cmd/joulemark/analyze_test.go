package main

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/analyze"
)

// analyze run's flag defaults are analyze.DefaultParams and
// analyze.DefaultLookback (one source; the enum's literal default too).
func TestAnalyzeFlagDefaults(t *testing.T) {
	c := parseCLI(t, "analyze", "run", "--run-id=r1").Analyze.Run
	if got, want := analyze.Params(c.Params), analyze.DefaultParams(); got != want {
		t.Errorf("analyze run flags give\n%+v\nanalyze.DefaultParams is\n%+v", got, want)
	}
	if lb, err := model.ParseDuration(c.Lookback); err != nil || time.Duration(lb) != analyze.DefaultLookback {
		t.Errorf("--lookback default %q, analyze.DefaultLookback is %v", c.Lookback, analyze.DefaultLookback)
	}
}
