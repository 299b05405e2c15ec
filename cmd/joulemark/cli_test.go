package main

import (
	"testing"

	"github.com/alecthomas/kong"
)

// testParser is joulemark's command line as main builds it.
func testParser(t *testing.T) (*CLI, *kong.Kong) {
	t.Helper()
	var cli CLI
	p, err := newParser(&cli)
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
