package benchjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// preflightTimeout bounds each pre-flight call.
const preflightTimeout = 15 * time.Second

// ErrPreflight is wrapped by every pre-flight failure: nothing started, no
// run directory exists.
var ErrPreflight = errors.New("pre-flight failed")

// preflight proves, before any run directory exists, that everything the
// run talks to answers and accepts its credentials: each exporter's
// authenticated no-op (which also says the run id is free there),
// Prometheus (the run id has no phases there yet), an empty remote write,
// and the target. Every failure is one line naming what and where; it
// returns each exporter's GPUs by base URL.
func (r *runner) preflight(ctx context.Context) (map[string][]phaseapi.GPUInfo, error) {
	var (
		mu   sync.Mutex
		errs []error
		gpus = map[string][]phaseapi.GPUInfo{}
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, c := range r.exporters {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, preflightTimeout)
			defer cancel()
			// a lifecycle's engine pod starts after the idle baseline
			pf, err := c.PreflightPod(cctx, r.runID, r.cfg.Engine.Pod, !r.cfg.Engine.NoLifecycle)
			if err != nil {
				fail(exporterPreflightError(c.BaseURL(), r.runID, err))
				return
			}
			switch {
			case r.cfg.Engine.Pod != "" && pf.Pod == "":
				r.log.Warn("the exporter is too old to resolve --engine.pod in pre-flight; the first phase will", "exporter", c.BaseURL())
			case pf.PodPending:
				r.log.Info("the engine's pod holds no GPU yet; the exporter resolves it by the warm-up (else the run stops before its load)",
					"exporter", c.BaseURL(), "pod", r.cfg.Engine.Pod, "pods_holding_gpus", phaseapi.DescribePods(pf.Pods))
			}
			if err := r.checkPods(c.BaseURL(), pf); err != nil {
				fail(err)
				return
			}
			mu.Lock()
			gpus[c.BaseURL()] = pf.GPUs
			mu.Unlock()
		})
	}
	if p := r.cfg.Prometheus; p.URL != "" {
		wg.Go(func() {
			if err := checkPrometheusRunID(ctx, p, r.runID); err != nil {
				fail(err)
			}
		})
	}
	if rw := r.cfg.RemoteWrite; rw.URL != "" {
		wg.Go(func() {
			if err := probeRemoteWrite(ctx, rw); err != nil {
				fail(fmt.Errorf("remote-write target %s: %w", secretfile.RedactURL(rw.URL), secretfile.SecretsOf(rw.URL).Error(err)))
			}
		})
	}
	wg.Go(func() {
		if err := r.probeTarget(ctx); err != nil {
			fail(err)
		}
	})
	wg.Wait()
	errs = append(errs, r.checkSelector(gpus)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w (nothing started, no run directory created):\n%w", ErrPreflight, errors.Join(errs...))
	}
	return gpus, nil
}

func exporterPreflightError(u, runID string, err error) error {
	var ae *phaseapi.APIError
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("exporter %s: token refused: check --exporter.bearer-token-file or JOULEMARK_API_TOKEN: %w", u, err)
		case http.StatusConflict:
			return fmt.Errorf("exporter %s: run ID %s was used before there: give a new --run-id: %w", u, runID, err)
		case http.StatusNotFound:
			return fmt.Errorf("exporter %s: no pre-flight endpoint: the exporter is older than this bench; upgrade it: %w", u, err)
		case http.StatusUnprocessableEntity:
			return fmt.Errorf("exporter %s: cannot measure --engine.pod: %w", u, err)
		}
	}
	return fmt.Errorf("exporter %s: %w", u, err)
}

// checkPrometheusRunID fails when Prometheus already holds phase markers of
// runID within the lookback.
func checkPrometheusRunID(ctx context.Context, p Prometheus, runID string) error {
	shown := secretfile.RedactURL(p.URL)
	rt, err := config.NewRoundTripperFromConfig(p.HTTP, "joulemark-bench")
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", shown, err)
	}
	cl, err := api.NewClient(api.Config{Address: p.URL, RoundTripper: rt})
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", shown, err)
	}
	lookback := p.Lookback
	q := fmt.Sprintf(`count by (run_id) (last_over_time(joulemark_phase_start_timestamp_seconds{run_id=%s}[%s]))`,
		strconv.Quote(runID), model.Duration(lookback))
	cctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	v, _, _, err := promv1.NewAPI(cl).Query(cctx, q, time.Now())
	if err != nil {
		return fmt.Errorf("prometheus %s: checking run ID %s: %w", shown, runID, err)
	}
	if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
		return fmt.Errorf("prometheus %s: run ID %s already has phase markers (within %s): give a new --run-id", shown, runID, model.Duration(lookback))
	}
	return nil
}

// probeRemoteWrite sends an empty write request: the target must accept it
// (2xx) with the run's credentials.
func probeRemoteWrite(ctx context.Context, rw RemoteWrite) error {
	body, err := remotewrite.Encode(nil)
	if err != nil {
		return err
	}
	hc, err := config.NewClientFromConfig(rw.HTTP, "joulemark-bench")
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, rw.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "joulemark-bench")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("empty write: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("empty write: answered %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), bytes.TrimSpace(msg))
	}
	return nil
}

// probeTarget checks the engine's address before the run: an already
// running service (no lifecycle) must list its models. The engine of a
// lifecycle run starts later; something answering at its address already
// (another engine, maybe an orphan of a killed run) is only warned about,
// since a hook may legitimately leave a server there.
func (r *runner) probeTarget(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	models, err := r.client.Models(cctx)
	if err == nil && len(models) == 0 {
		err = errors.New("no model served")
	}
	switch {
	case r.cfg.Engine.NoLifecycle && err != nil:
		return fmt.Errorf("target %s: GET /v1/models: %w", secretfile.RedactURL(r.cfg.Target), withTargetHint(r.cfg.Target, err))
	case !r.cfg.Engine.NoLifecycle && err == nil && r.cfg.Engine.Cmd != "":
		r.log.Warn("the target already serves models before the engine started: another engine holds the address? (an orphan of a killed run: see joulemark runs finalize)",
			"target", secretfile.RedactURL(r.cfg.Target))
	}
	return nil
}

// checkPods refuses a run that names neither the engine's pod nor its
// GPUs on an exporter that knows which pods hold its GPUs: it would count
// every pod's GPUs. The line names the pods and their GPUs.
func (r *runner) checkPods(u string, pf *phaseapi.Preflight) error {
	if !pf.AllocationsKnown || r.cfg.Engine.Pod != "" || len(r.cfg.ExporterGPUs) > 0 {
		return nil
	}
	return fmt.Errorf("exporter %s: it knows which pods hold its GPUs (%s) and the run names none: give the engine's pod, --engine.pod NAMESPACE/NAME or NAMESPACE/NAME-PREFIX* (a Deployment's pods), or its GPUs, --gpus UUID,…",
		u, phaseapi.DescribePods(pf.Pods))
}

// checkSelector refuses GPU UUIDs (gpus) an exporter does not
// read, as the exporter would refuse the first phase: each exporter must
// read every UUID given.
func (r *runner) checkSelector(gpus map[string][]phaseapi.GPUInfo) []error {
	var errs []error
	for _, c := range r.exporters {
		have, ok := gpus[c.BaseURL()]
		if !ok {
			continue // its pre-flight failed already
		}
		var uuids []string
		for _, g := range have {
			uuids = append(uuids, g.UUID)
		}
		for _, u := range r.cfg.ExporterGPUs {
			if !slices.Contains(uuids, u) {
				errs = append(errs, fmt.Errorf("exporter %s: GPU %s is not one it reads (it reads %s): check gpus (bench --gpus)",
					c.BaseURL(), u, strings.Join(uuids, ", ")))
			}
		}
	}
	return errs
}
