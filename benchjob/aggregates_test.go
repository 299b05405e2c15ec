package benchjob

import (
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestAggregatesFollowContract: the registry holds each of the contract's
// aggregates with its type, help and labels, and nothing else.
func TestAggregatesFollowContract(t *testing.T) {
	a := newAggregates("r1")
	a.observe(&runarchive.Request{Phase: string(contract.Formal), Success: true, LatencySeconds: 1,
		OutputTokens: 10, TTFTSeconds: new(0.1), TPOTSeconds: new(0.01)})
	mfs, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != len(contract.BenchAggregates) {
		t.Errorf("%d families registered, the contract has %d aggregates", len(mfs), len(contract.BenchAggregates))
	}
	for _, mf := range mfs {
		d, ok := contract.BenchAggregate(mf.GetName())
		if !ok {
			t.Errorf("%s is not in contract.BenchAggregates", mf.GetName())
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != d.Type || mf.GetHelp() != d.Help {
			t.Errorf("%s: type %s help %q, the contract says %s %q", d.Name, typ, mf.GetHelp(), d.Type, d.Help)
		}
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		if want := slices.Sorted(slices.Values(d.Labels)); !slices.Equal(labels, want) {
			t.Errorf("%s: labels %v, the contract says %v", d.Name, labels, want)
		}
	}
}
