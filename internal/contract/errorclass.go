package contract

// ErrorClass names why a request failed. The values are stable: they are
// requests.jsonl's error_class and the outcome label of
// joulemark_bench_requests_total. docs/bench.md's "Error classes" table
// lists each one (checked by a test).
type ErrorClass string

// Error classes.
const (
	ClassHTTPStatus        ErrorClass = "http_status"         // the server answered non-2xx
	ClassConnect           ErrorClass = "connect"             // could not connect (refused, DNS, reset before the answer)
	ClassTimeoutConnect    ErrorClass = "timeout_connect"     // connect timeout passed
	ClassTimeoutFirstToken ErrorClass = "timeout_first_token" // first-token timeout passed
	ClassTimeoutTotal      ErrorClass = "timeout_total"       // total timeout passed
	ClassBrokenStream      ErrorClass = "broken_stream"       // the stream stopped before it was complete
	ClassMalformedStream   ErrorClass = "malformed_stream"    // an event that is not a valid chunk
	ClassStreamError       ErrorClass = "stream_error"        // the server sent an error object in the stream
	ClassMissingUsage      ErrorClass = "missing_usage"       // no usage in the stream and usage is required
	ClassWrongModel        ErrorClass = "wrong_model"         // the answer names another model than asked
	ClassTimeoutIdle       ErrorClass = "timeout_idle"        // no byte of the answer for the idle timeout
	ClassCanceled          ErrorClass = "canceled"            // the run was stopped (Ctrl-C) while the request ran
	ClassCanceledAtEnd     ErrorClass = "canceled_at_end"     // still running when the phase's duration and drain timeout were over
	ClassInvalidUsage      ErrorClass = "invalid_usage"       // a usage block that cannot be true (negative, not an integer, far beyond max_tokens)
	ClassEmptyResponse     ErrorClass = "empty_response"      // a complete stream with neither content nor tokens
)

// ErrorClasses lists every error class.
var ErrorClasses = []ErrorClass{
	ClassHTTPStatus, ClassConnect, ClassTimeoutConnect, ClassTimeoutFirstToken, ClassTimeoutTotal,
	ClassBrokenStream, ClassMalformedStream, ClassStreamError, ClassMissingUsage, ClassWrongModel,
	ClassTimeoutIdle, ClassCanceled, ClassCanceledAtEnd, ClassInvalidUsage, ClassEmptyResponse,
}
