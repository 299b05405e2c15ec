package promserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"syscall"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/annotations"
)

// readOnlyStore serves a TSDB opened with tsdb.OpenDBReadOnly: nothing is
// written into its directory. DBReadOnly replays the WAL into a new head
// on every querier it opens (into a sandbox, here under the system temp
// directory) and keeps each head until it is closed, so the store opens
// one chunk querier over all the data at start and serves every query
// from it. That querier is not safe for concurrent use: queries take
// turns (a querier holds mu from Querier to Close).
type readOnlyStore struct {
	mu      sync.Mutex
	db      *tsdb.DBReadOnly
	all     storage.ChunkQuerier
	metas   []tsdb.BlockMeta
	sandbox string // removed on close
}

// openReadOnly opens dir read-only and replays its WAL once.
func openReadOnly(dir string, log *slog.Logger) (_ *readOnlyStore, err error) {
	sandbox, err := os.MkdirTemp("", "joulemark-tsdb-readonly-")
	if err != nil {
		return nil, fmt.Errorf("embedded prometheus: sandbox for the read-only TSDB: %w", err)
	}
	s := &readOnlyStore{sandbox: sandbox}
	defer func() {
		if err != nil {
			_ = s.close()
		}
	}()
	if s.db, err = tsdb.OpenDBReadOnly(dir, sandbox, log); err != nil {
		return nil, fmt.Errorf("embedded prometheus: opening TSDB in %s read-only: %w", dir, err)
	}
	blocks, err := s.db.Blocks()
	if err != nil {
		return nil, fmt.Errorf("embedded prometheus: reading the blocks of %s: %w", dir, err)
	}
	for _, b := range blocks {
		s.metas = append(s.metas, b.Meta())
	}
	if s.all, err = s.db.ChunkQuerier(math.MinInt64, math.MaxInt64); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return nil, fmt.Errorf("embedded prometheus: opening TSDB in %s read-only: its head chunks are hard-linked into a sandbox under %s, another filesystem: set TMPDIR to a directory on the filesystem of %s (%w)", dir, os.TempDir(), dir, err)
		}
		return nil, fmt.Errorf("embedded prometheus: reading the TSDB in %s read-only: %w", dir, err)
	}
	return s, nil
}

func (s *readOnlyStore) close() error {
	var errs []error
	if s.all != nil {
		errs = append(errs, s.all.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	errs = append(errs, os.RemoveAll(s.sandbox))
	return errors.Join(errs...)
}

// Querier waits for its turn and serves samples over [mint, maxt].
func (s *readOnlyStore) Querier(mint, maxt int64) (storage.Querier, error) {
	s.mu.Lock()
	return &readOnlyQuerier{readOnlyChunkQuerier{s: s, mint: mint, maxt: maxt}}, nil
}

// ChunkQuerier waits for its turn and serves chunks over [mint, maxt].
func (s *readOnlyStore) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	s.mu.Lock()
	return &readOnlyChunkQuerier{s: s, mint: mint, maxt: maxt}, nil
}

// readOnlyChunkQuerier is one turn of the store's querier, limited to
// [mint, maxt] (Select hints carry the range to the block queriers).
type readOnlyChunkQuerier struct {
	s          *readOnlyStore
	mint, maxt int64
	once       sync.Once
}

func (q *readOnlyChunkQuerier) hints(h *storage.SelectHints) *storage.SelectHints {
	if h == nil {
		return &storage.SelectHints{Start: q.mint, End: q.maxt}
	}
	return h
}

func (q *readOnlyChunkQuerier) Select(ctx context.Context, sortSeries bool, h *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return q.s.all.Select(ctx, sortSeries, q.hints(h), ms...)
}

func (q *readOnlyChunkQuerier) LabelValues(ctx context.Context, name string, h *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return q.s.all.LabelValues(ctx, name, h, ms...)
}

func (q *readOnlyChunkQuerier) LabelNames(ctx context.Context, h *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return q.s.all.LabelNames(ctx, h, ms...)
}

// Close ends the turn; the store's querier stays open.
func (q *readOnlyChunkQuerier) Close() error {
	q.once.Do(q.s.mu.Unlock)
	return nil
}

// readOnlyQuerier decodes the chunks into samples.
type readOnlyQuerier struct{ readOnlyChunkQuerier }

func (q *readOnlyQuerier) Select(ctx context.Context, sortSeries bool, h *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if h != nil && h.Func == "series" {
		return labelsOnly{q.readOnlyChunkQuerier.Select(ctx, sortSeries, h, ms...)}
	}
	return nonNilSeries{storage.NewSeriesSetFromChunkSeriesSet(q.readOnlyChunkQuerier.Select(ctx, sortSeries, h, ms...))}
}

// nonNilSeries skips the nil series a chunk series set decoded into samples
// yields for a series without a chunk in the range (the read-only head
// lists such series, and storage's chunk-to-sample set turns them into
// nil, which PromQL's engine dereferences): a query after the data's end
// answered "runtime error: invalid memory address" instead of nothing.
type nonNilSeries struct{ storage.SeriesSet }

func (s nonNilSeries) Next() bool {
	for s.SeriesSet.Next() {
		if s.At() != nil {
			return true
		}
	}
	return false
}

// ExemplarQuerier: a read-only TSDB has no exemplars (they live in memory
// only).
func (s *readOnlyStore) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return noExemplars{}, nil
}

type noExemplars struct{}

func (noExemplars) Select(int64, int64, ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return nil, nil
}

// errReadOnly answers the admin endpoints that would write.
var errReadOnly = errors.New("the TSDB is open read-only")

// readOnlyAdminStats serves the TSDB status endpoints of a read-only store.
type readOnlyAdminStats struct{ s *readOnlyStore }

func (readOnlyAdminStats) CleanTombstones() error { return errReadOnly }
func (readOnlyAdminStats) Delete(context.Context, int64, int64, ...*labels.Matcher) error {
	return errReadOnly
}
func (readOnlyAdminStats) Snapshot(string, bool) error { return errReadOnly }
func (readOnlyAdminStats) Stats(string, int) (*tsdb.Stats, error) {
	return nil, errors.New("head statistics are not kept for a read-only TSDB")
}
func (readOnlyAdminStats) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return tsdb.WALReplayStatus{}, nil
}
func (a readOnlyAdminStats) BlockMetas() ([]tsdb.BlockMeta, error) { return a.s.metas, nil }

// labelsOnly lists a chunk series set's series without their chunks (the
// series API: metadata only).
type labelsOnly struct{ storage.ChunkSeriesSet }

func (s labelsOnly) At() storage.Series {
	return storage.NewListSeries(s.ChunkSeriesSet.At().Labels(), nil)
}
