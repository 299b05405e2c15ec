package main

import "errors"

// CompareCmd is a placeholder until its issue lands.
type CompareCmd struct{}

// Run reports that the command is not built yet.
func (c *CompareCmd) Run(g *Globals) error { return errors.New("compare: not implemented yet") }
