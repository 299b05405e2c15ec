package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// analyze production prints its report on stdout without --out, and then
// writes no file.
func TestAnalyzeProductionStdoutOnly(t *testing.T) {
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb"), ListenAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// One pod's energy counter over the last 20 minutes, at 300 W.
	lbl := map[string]string{"__name__": contract.PodEnergy, "job": "joulemark-exporter", "instance": "n1:9402", "node": "n1", "namespace": "serve", "pod": "llama-a", "container": "engine"}
	var samples []remotewrite.Sample
	now := time.Now()
	for i := range 120 {
		ts := now.Add(time.Duration(i-120) * 10 * time.Second)
		samples = append(samples, remotewrite.Sample{Labels: lbl, Value: 3000 * float64(i), TimestampMs: ts.UnixMilli()})
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	t.Chdir(cwd)
	cli := parseCLI(t, "analyze", "production", "--prometheus.url", s.URL(), "--from", "now-30m", "--format", "json")
	var buf bytes.Buffer
	cli.Analyze.Production.stdout = &buf
	if err := cli.Analyze.Production.Run(context.Background(), &cli.Globals); err != nil {
		t.Fatalf("analyze production without --out: %v", err)
	}
	if !strings.Contains(buf.String(), `"models"`) {
		t.Errorf("stdout lacks the report:\n%s", buf.String())
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("analyze production without --out wrote %d entries into the working directory", len(entries))
	}
}
