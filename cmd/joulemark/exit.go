package main

import (
	"errors"
	"fmt"
)

// Exit statuses (docs/cli.md).
const (
	exitFailed   = 1 // error, nothing measured
	exitUsage    = 2 // bad usage: flags, config file
	exitUnusable = 3 // completed but unusable results
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
