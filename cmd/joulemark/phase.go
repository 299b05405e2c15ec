package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/phaseapi"
)

// PhaseCmd starts a lifecycle phase, or ends a run, on one or more exporters.
type PhaseCmd struct {
	RunID        string        `arg:"" name:"run-id" help:"Run ID."`
	Phase        string        `arg:"" name:"phase" help:"idle, startup, warmup, formal, release, or end (close the run)."`
	Exporter     []string      `name:"exporter" required:"" help:"Exporter base URL, e.g. http://gpu-node:9402 (repeatable)."`
	APITokenFile string        `name:"api-token-file" default:"" help:"File holding the exporters' API token (else env JOULEMARK_API_TOKEN)."`
	Timeout      time.Duration `default:"10s" help:"Timeout of each request."`
	GPUs         []string      `name:"gpus" help:"With the run's first phase: measure only these GPU UUIDs (comma-separated or repeated)."`
	Pod          string        `name:"pod" help:"With the run's first phase: measure only the GPUs the kubelet lists for this pod (namespace/name)."`

	CAFile                string `name:"exporter.ca-file" default:"" help:"CA certificate to verify exporters served over TLS."`
	InsecureSkipVerify    bool   `name:"exporter.insecure-skip-verify" help:"Do not verify the exporters' TLS certificates."`
	BasicAuthUser         string `name:"exporter.basic-auth-user" default:"" help:"Basic-auth user for exporters behind a web config with basic_auth_users (the token then goes in X-Joulemark-Token)."`
	BasicAuthPasswordFile string `name:"exporter.basic-auth-password-file" default:"" help:"File holding the basic-auth password."`
}

// Run posts the phase to every exporter and prints each one's answer.
func (c *PhaseCmd) Run(g *Globals) error {
	if c.Phase != "end" {
		if _, err := phaseapi.ParsePhase(c.Phase); err != nil {
			return fmt.Errorf("%w, or end", err)
		}
	}
	token, err := apiToken(c.APITokenFile)
	if err != nil {
		return err
	}
	if token == "" {
		return errors.New("no API token: pass --api-token-file or set JOULEMARK_API_TOKEN")
	}
	hc := config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: c.CAFile, InsecureSkipVerify: c.InsecureSkipVerify}}
	if c.BasicAuthUser != "" {
		hc.BasicAuth = &config.BasicAuth{Username: c.BasicAuthUser, PasswordFile: c.BasicAuthPasswordFile}
	}
	if err := hc.Validate(); err != nil {
		return fmt.Errorf("exporter HTTP settings: %w", err)
	}
	httpClient, err := config.NewClientFromConfig(hc, "joulemark-phase")
	if err != nil {
		return fmt.Errorf("exporter HTTP settings: %w", err)
	}
	httpClient.Timeout = c.Timeout
	var errs []error
	for _, u := range c.Exporter {
		cl, err := phaseapi.NewClient(u, token, httpClient)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.BasicAuthUser != "" {
			cl.WithTokenHeader()
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
		var st *phaseapi.RunStatus
		if c.Phase == "end" {
			st, err = cl.EndRun(ctx, c.RunID)
		} else {
			st, err = cl.StartPhaseSelect(ctx, c.RunID, phaseapi.Phase(c.Phase), phaseapi.Selector{GPUs: c.GPUs, Pod: c.Pod})
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
