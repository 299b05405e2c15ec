package main

import (
	"testing"

	"github.com/alecthomas/kong"
)

// testParser is joulemark's command line as the tests parse it: no
// environment variables, version "test".
func testParser(t *testing.T) (*CLI, *kong.Kong) {
	t.Helper()
	var cli CLI
	p, err := kong.New(&cli, kong.Name("joulemark"), kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &cli, p
}

// parseCLI parses args; an error fails the test.
func parseCLI(t *testing.T, args ...string) *CLI {
	t.Helper()
	cli, p := testParser(t)
	if _, err := p.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return cli
}
