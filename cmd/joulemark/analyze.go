package main

import "errors"

// AnalyzeCmd is a placeholder until its issue lands.
type AnalyzeCmd struct{}

// Run reports that the command is not built yet.
func (c *AnalyzeCmd) Run(g *Globals) error { return errors.New("analyze: not implemented yet") }
