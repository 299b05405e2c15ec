package promserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/joulemark/joulemark/internal/remotewrite"
)

// appendBatch is how many samples go in one TSDB transaction.
const appendBatch = 50_000

// AppendSamples writes samples straight into the TSDB, in timestamp order,
// without HTTP: the quick way for tests and loaders to put fixture series in
// place. Samples may be given in any order and may be older than what is
// stored (up to the out-of-order window). On an error the batch in progress is
// rolled back; earlier batches stay committed.
func (s *Server) AppendSamples(ctx context.Context, samples []remotewrite.Sample) error {
	if s.db == nil {
		return fmt.Errorf("appending samples: %w", errReadOnly)
	}
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(samples[a].TimestampMs, samples[b].TimestampMs) })

	type series struct {
		ls  labels.Labels
		ref storage.SeriesRef
	}
	cache := map[string]*series{}
	var (
		key   []byte
		names []string
	)
	for start := 0; start < len(idx); start += appendBatch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("appending samples: %w", err)
		}
		app := s.db.AppenderV2(ctx)
		for _, i := range idx[start:min(start+appendBatch, len(idx))] {
			smp := samples[i]
			key, names = seriesKey(key[:0], names[:0], smp.Labels)
			ser, ok := cache[string(key)]
			if !ok {
				if smp.Labels[model.MetricNameLabel] == "" {
					_ = app.Rollback()
					return fmt.Errorf("appending sample %d: no %s label: %v", i, model.MetricNameLabel, smp.Labels)
				}
				ser = &series{ls: labels.FromMap(smp.Labels)}
				cache[string(key)] = ser
			}
			ref, err := app.Append(ser.ref, ser.ls, 0, smp.TimestampMs, smp.Value, nil, nil, storage.AOptions{})
			if err != nil {
				_ = app.Rollback()
				return fmt.Errorf("appending sample %d (%s at %d ms): %w", i, ser.ls, smp.TimestampMs, err)
			}
			ser.ref = ref
		}
		if err := app.Commit(); err != nil {
			return fmt.Errorf("appending samples: commit: %w", err)
		}
	}
	return nil
}

// seriesKey appends a canonical key of lbls to b, using names as scratch.
func seriesKey(b []byte, names []string, lbls map[string]string) ([]byte, []string) {
	for n := range lbls {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b = append(b, n...)
		b = append(b, 0)
		b = append(b, lbls[n]...)
		b = append(b, 0)
	}
	return b, names
}
