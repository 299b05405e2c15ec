package analyze

import (
	"fmt"
	"math"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
)

// scrapeCoverage flags scraped series that cover too little of the formal
// phase. A series absent from the whole run (not scraped, an older
// exporter) is not a gap: the sections built on it say so themselves.
func (c *computation) scrapeCoverage() {
	fb, ok := c.complete("formal")
	if !ok || !(fb.End > fb.Start) {
		return
	}
	cov := func(s []Sample) float64 {
		r, _ := coverage(s, fb.Start, fb.End, medianInterval(s))
		return r
	}
	var low []string
	check := func(what string, r float64) {
		if r < c.p.MinCoverage {
			low = append(low, fmt.Sprintf("%s %.3f", what, r))
		}
	}
	// Each GPU's series: the worst GPU counts.
	for _, f := range []struct {
		what string
		get  func(GPUSeries) []Sample
	}{
		{"GPU memory", func(g GPUSeries) []Sample { return g.Memory }},
		{"GPU utilization", func(g GPUSeries) []Sample { return g.Utilization }},
	} {
		worst, any := 1.0, false
		for _, g := range c.d.GPUs {
			if s := f.get(g); len(s) > 0 {
				worst, any = min(worst, cov(s)), true
			}
		}
		if any {
			check(f.what, worst)
		}
	}
	// The engine's metrics: by name, the best-covered series counts (a
	// series can appear mid-run, e.g. a new label value); the worst name.
	if ed := c.d.Engine; ed != nil && len(ed.Series) > 0 {
		worst := 1.0
		for _, series := range ed.Series {
			best := math.Inf(-1)
			for _, s := range series {
				if len(s) > 0 {
					best = max(best, cov(s))
				}
			}
			if !math.IsInf(best, -1) {
				worst = min(worst, best)
			}
		}
		check("engine metrics", worst)
	}
	if len(low) > 0 {
		c.flag(contract.FlagScrapeCoverageLow, false, "scraped series cover too little of the formal phase (%s; under %.3f): the server view, GPU memory and the diagnosis come from the samples present, energy and requests do not depend on them", strings.Join(low, ", "), c.p.MinCoverage)
	}
}
