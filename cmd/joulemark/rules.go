package main

import "errors"

// RulesCmd is a placeholder until its issue lands.
type RulesCmd struct{}

// Run reports that the command is not built yet.
func (c *RulesCmd) Run(g *Globals) error { return errors.New("rules: not implemented yet") }
