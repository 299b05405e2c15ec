package openai

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Class names why a request failed. The values are stable: they appear in
// the run archive (requests.jsonl "error") and in joulemark_bench_requests_total{outcome}.
type Class string

// Error classes.
const (
	ClassHTTPStatus        Class = "http_status"         // the server answered non-2xx
	ClassConnect           Class = "connect"             // could not connect (refused, DNS, reset before the answer)
	ClassTimeoutConnect    Class = "timeout_connect"     // connect timeout passed
	ClassTimeoutFirstToken Class = "timeout_first_token" // first-token timeout passed
	ClassTimeoutTotal      Class = "timeout_total"       // total timeout passed
	ClassBrokenStream      Class = "broken_stream"       // the stream stopped before it was complete
	ClassMalformedStream   Class = "malformed_stream"    // an event that is not a valid chunk
	ClassStreamError       Class = "stream_error"        // the server sent an error object in the stream
	ClassMissingUsage      Class = "missing_usage"       // no usage in the stream and usage is required
	ClassWrongModel        Class = "wrong_model"         // the answer names another model than asked
	ClassTimeoutIdle       Class = "timeout_idle"        // no byte of the answer for the idle timeout
	ClassCanceled          Class = "canceled"            // the run was stopped (Ctrl-C) while the request ran
	ClassCanceledAtEnd     Class = "canceled_at_end"     // still running when the phase's duration and drain timeout were over
	ClassInvalidUsage      Class = "invalid_usage"       // a usage block that cannot be true (negative, not an integer, far beyond max_tokens)
	ClassEmptyResponse     Class = "empty_response"      // a complete stream with neither content nor tokens
)

// ErrCanceledAtEnd is the cancel cause a caller gives a request's context to
// end it because its phase is over (ClassCanceledAtEnd).
var ErrCanceledAtEnd = errors.New("phase duration and drain timeout over")

// Error is a failed request: its class and what happened.
type Error struct {
	Class      Class
	StatusCode int // for ClassHTTPStatus
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	s := string(e.Class)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" %d", e.StatusCode)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err, or "" when err is nil or not an *Error.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ""
}

var (
	errFirstTokenTimeout = errors.New("first-token timeout")
	errTotalTimeout      = errors.New("total timeout")
	errIdleTimeout       = errors.New("idle timeout: no byte of the answer")
)

// classify maps a transport or read error to a class. started says whether
// the answer's headers had arrived (then a transport error breaks the stream).
func classify(ctx context.Context, err error, started bool) *Error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errFirstTokenTimeout):
		return &Error{Class: ClassTimeoutFirstToken, Err: cause}
	case errors.Is(cause, errTotalTimeout):
		return &Error{Class: ClassTimeoutTotal, Err: cause}
	case errors.Is(cause, errIdleTimeout):
		return &Error{Class: ClassTimeoutIdle, Err: cause}
	case errors.Is(cause, ErrCanceledAtEnd):
		return &Error{Class: ClassCanceledAtEnd, Err: cause}
	case cause != nil:
		return &Error{Class: ClassCanceled, Err: cause}
	}
	var op *net.OpError
	if !started && errors.As(err, &op) && op.Op == "dial" {
		if op.Timeout() {
			return &Error{Class: ClassTimeoutConnect, Err: err}
		}
		return &Error{Class: ClassConnect, Err: err}
	}
	var ne net.Error
	if !started && errors.As(err, &ne) && ne.Timeout() {
		return &Error{Class: ClassTimeoutConnect, Err: err}
	}
	if started {
		return &Error{Class: ClassBrokenStream, Err: err}
	}
	return &Error{Class: ClassConnect, Err: err}
}
