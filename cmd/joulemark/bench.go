package main

import "errors"

// BenchCmd is a placeholder until its issue lands.
type BenchCmd struct{}

// Run reports that the command is not built yet.
func (c *BenchCmd) Run(g *Globals) error { return errors.New("bench: not implemented yet") }
