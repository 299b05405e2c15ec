package main

import (
	"github.com/joulemark/joulemark/dashboards"
)

// DashboardsCmd groups the dashboard subcommands.
type DashboardsCmd struct {
	Generate DashboardsGenerateCmd `cmd:"" help:"Write the Grafana dashboards as JSON (and optionally as a Kubernetes ConfigMap)."`
}

// DashboardsGenerateCmd writes the dashboards' JSON files.
type DashboardsGenerateCmd struct {
	Out       string `default:"dashboards" type:"path" help:"Directory the JSON files are written to (created if missing)."`
	ConfigMap string `name:"configmap" type:"path" placeholder:"FILE" help:"Also write the dashboards as a Kubernetes ConfigMap for the Grafana sidecar (e.g. deploy/kubernetes/dashboards-configmap.yaml)."`
}

// Run renders the dashboards and writes them atomically.
func (c *DashboardsGenerateCmd) Run(g *Globals) error {
	written, err := dashboards.Generate(c.Out, c.ConfigMap)
	if err != nil {
		return err
	}
	for _, p := range written {
		g.Logger().Info("wrote", "file", p)
	}
	return nil
}
