package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSuggestionNeverHidden: a typo of a flag is answered with the visible
// flag, never with the hidden deprecated alias kong also knows
// (--prometheus-url); a Prometheus URL ending in /api/v1 is refused with
// the base URL.
func TestSuggestionNeverHidden(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, not  string
		wantStatus int
	}{
		{[]string{"analyze", "run", "--prometheus.ur", "http://x", "--run-id", "a"}, `did you mean "--prometheus.url"?`, "prometheus-url", exitUsage},
		{[]string{"analyze", "run", "--run-id", "a", "--prometheus.url", "http://prom:9090/api/v1/query"}, "e.g. http://prom:9090", "", exitUsage},
		{[]string{"analyze", "run", "--run-id", "a", "--prometheus.url", "prom:9090"}, "did you mean http://prom:9090?", "", exitUsage},
		{[]string{"compare", "no-such-run", "--runs-dir", "/nonexistent"}, "no report found (tried /nonexistent/no-such-run/report/report.json, reports/no-such-run/report.json)", "", exitUsage},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != tc.wantStatus || !strings.Contains(first, tc.want) || tc.not != "" && strings.Contains(first, tc.not) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", tc.args, code, first, tc.wantStatus, tc.want)
		}
	}
}
