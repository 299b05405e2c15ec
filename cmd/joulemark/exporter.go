package main

import "errors"

// ExporterCmd is a placeholder until its issue lands.
type ExporterCmd struct{}

// Run reports that the command is not built yet.
func (c *ExporterCmd) Run(g *Globals) error { return errors.New("exporter: not implemented yet") }
