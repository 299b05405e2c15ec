package main

import "errors"

// TSDBCmd is a placeholder until its issue lands.
type TSDBCmd struct{}

// Run reports that the command is not built yet.
func (c *TSDBCmd) Run(g *Globals) error { return errors.New("tsdb: not implemented yet") }
