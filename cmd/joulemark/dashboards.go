package main

import "errors"

// DashboardsCmd is a placeholder until its issue lands.
type DashboardsCmd struct{}

// Run reports that the command is not built yet.
func (c *DashboardsCmd) Run(g *Globals) error { return errors.New("dashboards: not implemented yet") }
