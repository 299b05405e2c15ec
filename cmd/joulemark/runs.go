package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// RunsCmd lists run archives and finishes what a killed bench or a
// Prometheus outage left undone.
type RunsCmd struct {
	List     RunsListCmd     `cmd:"" help:"List the runs of a runs directory: id, status, start, requests, validity (its report), flags."`
	Finalize RunsFinalizeCmd `cmd:"" help:"Finish a run whose bench was killed: kill its engine, make the archive final (status killed), end the run on its exporters."`
	Push     RunsPushCmd     `cmd:"" help:"Re-send a run's per-request samples and aggregates with their original timestamps (after a Prometheus outage); idempotent."`
}

// RunsListCmd lists the runs of a runs directory.
type RunsListCmd struct {
	RunsDir string `name:"runs-dir" default:"runs" help:"Where run archives are."`
	Format  string `name:"format" default:"text" enum:"text,json,csv" help:"Output format (${enum})."`
}

// Run prints one line per run, oldest first.
func (c *RunsListCmd) Run(g *Globals) error {
	rows, err := benchjob.ListRuns(c.RunsDir)
	if err != nil {
		return err
	}
	return benchjob.WriteRunList(os.Stdout, c.Format, rows)
}

// RunsFinalizeCmd finishes a killed run.
type RunsFinalizeCmd struct {
	RunID    string               `arg:"" name:"run-id" type:"runid" help:"The run to finalize."`
	RunsDir  string               `name:"runs-dir" default:"runs" help:"Where run archives are."`
	Exporter clientflags.Exporter `embed:"" prefix:"exporter."`
}

// Run kills the run's engine group, makes its archive final and ends it on
// its exporters (those its manifest lists, or --exporter.url when given).
func (c *RunsFinalizeCmd) Run(g *Globals) error {
	clients, err := c.Exporter.PhaseClients("joulemark-runs", 10*time.Second)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := benchjob.Finalize(ctx, c.RunsDir, c.RunID, c.Exporter.URLs, clients.Client)
	if err != nil {
		return err
	}
	return res.WriteText(os.Stdout, c.RunsDir, c.RunID)
}

// skippedLine names the requests runs push left out: how many, their
// lines (the first 20) and the first one's reason.
func skippedLine(sk []benchjob.SkippedRequest) string {
	var lines []string
	for _, s := range sk[:min(len(sk), 20)] {
		lines = append(lines, strconv.Itoa(s.Line))
	}
	if len(sk) > 20 {
		lines = append(lines, "…")
	}
	return fmt.Sprintf("%d requests left out as implausible (requests.jsonl lines %s; line %d: %s)", len(sk), strings.Join(lines, ", "), sk[0].Line, sk[0].Why)
}

// RunsPushCmd re-sends a run's samples.
type RunsPushCmd struct {
	RunID       string                  `arg:"" name:"run-id" type:"runid" help:"The run to push."`
	RunsDir     string                  `name:"runs-dir" default:"runs" help:"Where run archives are."`
	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write."`
}

// Run pushes and says how many samples the target accepted.
func (c *RunsPushCmd) Run(g *Globals) error {
	if c.RemoteWrite.URL == "" {
		return usageErrorf("--remote-write.url is required")
	}
	hc, err := c.RemoteWrite.HTTPConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := benchjob.Push(ctx, c.RunsDir, c.RunID, remotewrite.Config{URL: c.RemoteWrite.URL, HTTP: hc}, g.Logger())
	if res != nil {
		fmt.Printf("run %s: %d requests, %d samples sent, %d accepted, %d lost\n", c.RunID, res.Requests, res.Samples, res.Stats.Acknowledged, res.Stats.Lost())
		if len(res.Skipped) > 0 {
			fmt.Printf("run %s: %s\n", c.RunID, skippedLine(res.Skipped))
		}
	}
	return err
}
