package main

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"

	"github.com/alecthomas/kong"
	"github.com/joulemark/joulemark/internal/contract"
)

// Exit statuses (docs/cli.md). A panic is exit 1, never 2: Go's own
// status for an unrecovered panic is 2, so every panic is recovered
// (runCommand here, the bench's goroutines in benchjob).
const (
	exitFailed   = 1 // error, nothing measured; an internal error (panic)
	exitUsage    = 2 // bad usage: flags, config file
	exitUnusable = 3 // completed but unusable results
	// exitRegression: diff's gate found a regression; a report it could
	// not find (2) or read (1) is told apart from it.
	exitRegression = 4
)

// exitError makes joulemark exit with code instead of 1. Commands return
// one through usageErrorf or withExitCode; main maps it to the status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process exit status (kong.ExitCoder).
func (e *exitError) ExitCode() int { return e.code }

// usageErrorf is a bad-usage error: exit status 2, printed with the
// command's short usage.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// withExitCode makes err exit with code; nil stays nil.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode is the exit status for err: an exitError's code, else 1.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitFailed
}

// runCommand runs a command; a panic in it is printed with its stack to
// stderr and becomes an error that exits 1 (exitFailed), not Go's 2, which
// means bad usage here.
func runCommand(stderr io.Writer, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "panic: %v\n\n%s\n", v, debug.Stack())
			err = withExitCode(exitFailed, fmt.Errorf("internal error (panic): %v (stack above)", v))
		}
	}()
	return f()
}

// runIDMapper decodes a run id flag or argument (`type:"runid"`): one
// outside contract.RunIDGrammar is a parse error, bad usage (2) in every
// command.
type runIDMapper struct{}

func (runIDMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("run id", &s); err != nil {
		return err
	}
	if err := contract.ValidateRunID(s); err != nil {
		return err
	}
	target.SetString(s)
	return nil
}
