package main

import "errors"

// DemoCmd is a placeholder until its issue lands.
type DemoCmd struct{}

// Run reports that the command is not built yet.
func (c *DemoCmd) Run(g *Globals) error { return errors.New("demo: not implemented yet") }
