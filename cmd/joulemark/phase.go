package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// PhaseCmd starts a lifecycle phase, or ends a run, on one or more exporters.
type PhaseCmd struct {
	RunID    string               `arg:"" name:"run-id" type:"runid" help:"Run ID."`
	Phase    string               `arg:"" name:"phase" help:"idle, startup, warmup, formal, release, or end (close the run)."`
	Exporter clientflags.Exporter `embed:"" prefix:"exporter."`
	Timeout  time.Duration        `default:"10s" help:"Timeout of each request."`
	GPUs     []string             `name:"gpus" placeholder:"UUID" help:"With the run's first phase: measure only these GPU UUIDs (comma-separated or repeated)."`
	Pod      string               `name:"engine.pod" help:"With the run's first phase: measure only the GPUs the kubelet lists for this pod (namespace/name, or namespace/name-prefix*)."`
}

// Run posts the phase to every exporter and prints each one's answer.
func (c *PhaseCmd) Run(ctx context.Context, g *Globals) error {
	if c.Phase != "end" {
		if _, err := contract.ParsePhase(c.Phase); err != nil {
			return usageErrorf("%w, or end", err)
		}
	}
	if len(c.Exporter.URLs) == 0 {
		return usageErrorf("give at least one --exporter.url")
	}
	clients, err := c.Exporter.PhaseClients("joulemark-phase", c.Timeout)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	if !clients.Authenticated {
		return usageErrorf("no API token: pass --exporter.bearer-token-file or set %s", clientflags.TokenEnv)
	}
	var errs []error
	for _, u := range c.Exporter.URLs {
		cl, err := clients.Client(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, c.Timeout)
		var st *phaseapi.RunStatus
		if c.Phase == "end" {
			st, err = cl.EndRun(rctx, c.RunID)
		} else {
			st, err = cl.StartPhaseSelect(rctx, c.RunID, contract.Phase(c.Phase), phaseapi.Selector{GPUs: c.GPUs, Pod: c.Pod})
		}
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		at := ""
		if n := len(st.Phases); n > 0 {
			last := st.Phases[n-1]
			at = fmt.Sprintf(" phase=%s start=%.6f", last.Phase, last.Start)
			if last.End != nil {
				at += fmt.Sprintf(" end=%.6f", *last.End)
			}
		}
		fmt.Fprintf(os.Stdout, "%s run=%s state=%s%s\n", cl.BaseURL(), st.RunID, st.State, at)
	}
	return errors.Join(errs...)
}
