package analyze

import (
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// TestScrapeCoverage: scraped series (GPU memory, GPU utilization, engine
// metrics) that miss part of the formal phase (30–130 s) raise the warning
// scrape_coverage_low naming them; complete series, absent series and an
// engine series that only appears mid-phase beside a complete one do not.
func TestScrapeCoverage(t *testing.T) {
	hole := func(s []Sample, from, to float64) []Sample {
		var out []Sample
		for _, x := range s {
			if x.T < fixtureBase+from || x.T > fixtureBase+to {
				out = append(out, x)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		edit func(d *RunData)
		want string // in the flag's message; "" for no flag
	}{
		{"complete", func(*RunData) {}, ""},
		{"memory hole on one GPU", func(d *RunData) { d.GPUs[1].Memory = hole(d.GPUs[1].Memory, 50, 90) }, "GPU memory 0.580"},
		{"utilization gone from the formal phase", func(d *RunData) {
			for i := range d.GPUs {
				d.GPUs[i].Utilization = hole(d.GPUs[i].Utilization, 29, 131)
			}
		}, "GPU utilization 0.000"},
		{"engine outage", func(d *RunData) {
			for n, ss := range d.Engine.Series {
				d.Engine.Series[n] = [][]Sample{hole(ss[0], 40, 120)}
			}
		}, "engine metrics 0.180"},
		{"hole shorter than two scrape intervals", func(d *RunData) { d.GPUs[0].Memory = hole(d.GPUs[0].Memory, 60, 61) }, ""},
		{"absent series", func(d *RunData) {
			for i := range d.GPUs {
				d.GPUs[i].Memory, d.GPUs[i].Utilization = nil, nil
			}
			d.Engine = nil
		}, ""},
		{"engine series appearing mid-phase", func(d *RunData) {
			n := "vllm:num_requests_running"
			d.Engine.Series[n] = append(d.Engine.Series[n], hole(d.Engine.Series[n][0], -10, 80))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixture()
			tc.edit(d)
			r, _, err := computeSeries(d, fixtureParams())
			if err != nil {
				t.Fatal(err)
			}
			var got *report.Flag
			for i, f := range r.Flags {
				if f.Code == contract.FlagScrapeCoverageLow {
					got = &r.Flags[i]
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("flagged: %s", got.Message)
			case tc.want != "" && got == nil:
				t.Errorf("not flagged (flags %v), want %q", r.Flags, tc.want)
			case got != nil && (got.Excluding || !strings.Contains(got.Message, tc.want)):
				t.Errorf("flag %+v, want a warning naming %q", *got, tc.want)
			}
		})
	}
}
