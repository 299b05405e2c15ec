package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// TestHostEnergyUnavailable: without readable RAPL every host figure is
// null with the reason, never 0, and the report says so.
func TestHostEnergyUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   *HostData
		reason string
		say    string
	}{
		{"no host metrics", nil, report.ReasonHostNotExported, "published no host energy"},
		{"permission denied", &HostData{PhaseEnergy: map[string]float64{}, Unavailable: map[string]string{"node-a:9402": "permission_denied"}},
			"permission_denied", "root-only"},
		{"no RAPL", &HostData{PhaseEnergy: map[string]float64{}, Unavailable: map[string]string{"node-a:9402": "no_rapl"}},
			"no_rapl", "no RAPL powercap zone"},
		{"one node of two", &HostData{PhaseEnergy: map[string]float64{"formal": 100}, Unavailable: map[string]string{"node-b:9402": "permission_denied"}},
			"permission_denied", "missing on some nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixture()
			d.Host = tc.host
			r, _, err := computeSeries(d, fixtureParams())
			if err != nil {
				t.Fatal(err)
			}
			he := r.HostEnergy
			if he == nil || he.Available || he.Reason != tc.reason || !strings.Contains(he.Message, tc.say) {
				t.Fatalf("host energy %+v, want unavailable, reason %q, message with %q", he, tc.reason, tc.say)
			}
			if he.FormalJoules != nil || he.LifecycleJoules != nil || he.GPUPlusHostSteadyStateJoulesPerToken != nil || he.TokensPerJouleGPUPlusHost != nil || len(he.Stages) != 0 {
				t.Errorf("unavailable host energy carries figures: %+v", he)
			}
			js, err := report.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(js, []byte(`"formal_joules": null`)) {
				t.Errorf("report.json host_energy without explicit nulls:\n%s", js)
			}
			var md bytes.Buffer
			if err := WriteMarkdown(&md, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(md.String(), "Host energy: **null** ("+tc.reason+")") {
				t.Errorf("report.md does not say host energy is null and why")
			}
		})
	}
}
