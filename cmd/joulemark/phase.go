package main

import "errors"

// PhaseCmd is a placeholder until its issue lands.
type PhaseCmd struct{}

// Run reports that the command is not built yet.
func (c *PhaseCmd) Run(g *Globals) error { return errors.New("phase: not implemented yet") }
