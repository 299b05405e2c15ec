package analyze

import (
	"context"
	"fmt"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/querysplit"
	"github.com/joulemark/joulemark/internal/remoteread"
)

// rangeRead is the samples of sel in window w: the range selector
// evaluated at the window's end through the query API (split in time
// where it would exceed the sample limit), or the same samples through
// remote read.
func (l *loader) rangeRead(ctx context.Context, sel string, w window) (model.Matrix, error) {
	if l.rr == nil {
		split := querysplit.Reader{API: l.api, MaxSamples: l.maxSamples, Timeout: l.timeout}
		return split.Read(ctx, sel, w.endMs-w.rngMs, w.endMs)
	}
	return l.rr.Read(ctx, sel, w.endMs-w.rngMs, w.endMs)
}

// rangeEach hands f each series of sel in window w, as rangeRead returns
// them, without holding the window's matrix when reading through remote
// read. reused is true when the samples lie in a buffer reused for the
// next series: f then copies what it keeps.
func (l *loader) rangeEach(ctx context.Context, sel string, w window, f func(metric model.Metric, samples []model.SamplePair, reused bool)) error {
	if l.rr == nil {
		m, err := l.rangeRead(ctx, sel, w)
		if err != nil {
			return err
		}
		for _, ss := range m {
			f(ss.Metric, ss.Values, false)
		}
		return nil
	}
	return l.rr.Each(ctx, sel, w.endMs-w.rngMs, w.endMs, func(metric model.Metric, samples []model.SamplePair) error {
		f(metric, samples, true)
		return nil
	})
}

// chooseReadAPI settles how the raw series are read, before the first raw
// read: with remoteread.Auto, a remote read of the run's phase starts over the
// span must succeed, else the query API is used (a server without remote
// read: VictoriaMetrics, a proxy that only passes the query API).
func (l *loader) chooseReadAPI(ctx context.Context, mode string, sp rawSpan) error {
	switch mode {
	case remoteread.Query:
		l.rr = nil
		return nil
	case remoteread.Remote:
		return nil
	}
	w := sp.windows[len(sp.windows)-1]
	_, err := l.rr.Read(ctx, fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel()), w.endMs-w.rngMs, w.endMs)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		l.readFallback = err.Error()
		l.rr = nil
		l.log.Info("remote read unavailable: the raw series are read through the query API (same report, more CPU)", "err", err)
		return nil
	}
	l.log.Debug("the raw series are read through remote read")
	return nil
}
