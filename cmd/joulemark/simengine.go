package main

import "errors"

// SimEngineCmd is a placeholder until its issue lands.
type SimEngineCmd struct{}

// Run reports that the command is not built yet.
func (c *SimEngineCmd) Run(g *Globals) error { return errors.New("simengine: not implemented yet") }
