package benchjob

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// exporterCallTimeout bounds one attempt of an exporter call.
const exporterCallTimeout = 10 * time.Second

// transient reports whether an exporter call may succeed when retried: no
// answer at all, a 5xx or a 429. Other answers (401, 409, 404, 400) are
// final.
func transient(err error) bool {
	var ae *phaseapi.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode/100 == 5 || ae.StatusCode == http.StatusTooManyRequests
	}
	return true
}

// retryExporter calls f until it succeeds, fails for good, or maxElapsed
// passed, with exponential backoff (0.5 s doubling to 5 s) between tries.
func retryExporter(maxElapsed time.Duration, f func(context.Context) error, notify func(error, time.Duration)) error {
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval, eb.MaxInterval = 500*time.Millisecond, 5*time.Second
	_, err := backoff.Retry(context.Background(), func() (struct{}, error) {
		ctx, cancel := context.WithTimeout(context.Background(), exporterCallTimeout)
		defer cancel()
		err := f(ctx)
		if err != nil && !transient(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(eb), backoff.WithMaxElapsedTime(maxElapsed), backoff.WithNotify(notify))
	return err
}

// checkExporterStatus compares an exporter's final view of the run with
// what the bench posted: a posted phase the exporter lacks is lost; gaps
// say the exporter was down. It returns the flags to set and why.
func checkExporterStatus(url string, st *phaseapi.RunStatus, posted []string) (flags []string, why []string) {
	have := map[string]bool{}
	for _, ph := range st.Phases {
		have[string(ph.Phase)] = true
	}
	var lost []string
	for _, p := range posted {
		if !have[p] {
			lost = append(lost, p)
		}
	}
	if len(lost) > 0 {
		flags = append(flags, contract.FlagExporterLostPhases)
		why = append(why, "phases posted but missing: "+strings.Join(lost, ", "))
	}
	for _, g := range st.Gaps {
		code := contract.FlagExporterRestarted
		if g.GPUFailure() {
			code = contract.FlagGPUFailed
		}
		if !slices.Contains(flags, code) {
			flags = append(flags, code)
		}
		why = append(why, g.Describe(url, st.GPUs))
	}
	return flags, why
}
