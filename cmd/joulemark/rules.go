package main

import (
	"os"

	"github.com/joulemark/joulemark/rules"
)

// RulesCmd prints the embedded Prometheus rules.
type RulesCmd struct {
	Print RulesPrintCmd `cmd:"" default:"withargs" help:"Print the recording and alerting rules as one Prometheus rule file."`
}

// RulesPrintCmd prints all rules, or one embedded file.
type RulesPrintCmd struct {
	File string `help:"Print only this embedded file (recording.yml or alerts.yml)."`
}

// Run prints the rules to stdout.
func (c *RulesPrintCmd) Run(g *Globals) error {
	if c.File == "" {
		return rules.Print(os.Stdout)
	}
	b, err := rules.File(c.File)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
