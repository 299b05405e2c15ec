package openai

import (
	"errors"
	"fmt"
	"net"

	"github.com/joulemark/joulemark/internal/contract"
)

// ErrCanceledAtEnd is the cancel cause a caller gives a request's context to
// end it because its phase is over (contract.ClassCanceledAtEnd).
var ErrCanceledAtEnd = errors.New("phase duration and drain timeout over")

// Error is a failed request: its class and what happened.
type Error struct {
	Class      contract.ErrorClass
	StatusCode int // for contract.ClassHTTPStatus
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
func ClassOf(err error) contract.ErrorClass {
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

// classify maps a transport or read error to a class; cause is why the
// stream was ended early (its watch's), nil when it was not. started says
// whether the answer's headers had arrived (then a transport error breaks
// the stream).
func classify(cause, err error, started bool) *Error {
	switch {
	case errors.Is(cause, errFirstTokenTimeout):
		return &Error{Class: contract.ClassTimeoutFirstToken, Err: cause}
	case errors.Is(cause, errTotalTimeout):
		return &Error{Class: contract.ClassTimeoutTotal, Err: cause}
	case errors.Is(cause, errIdleTimeout):
		return &Error{Class: contract.ClassTimeoutIdle, Err: cause}
	case errors.Is(cause, ErrCanceledAtEnd):
		return &Error{Class: contract.ClassCanceledAtEnd, Err: cause}
	case cause != nil:
		return &Error{Class: contract.ClassCanceled, Err: cause}
	}
	var op *net.OpError
	if !started && errors.As(err, &op) && op.Op == "dial" {
		if op.Timeout() {
			return &Error{Class: contract.ClassTimeoutConnect, Err: err}
		}
		return &Error{Class: contract.ClassConnect, Err: err}
	}
	var ne net.Error
	if !started && errors.As(err, &ne) && ne.Timeout() {
		return &Error{Class: contract.ClassTimeoutConnect, Err: err}
	}
	if started {
		return &Error{Class: contract.ClassBrokenStream, Err: err}
	}
	return &Error{Class: contract.ClassConnect, Err: err}
}
