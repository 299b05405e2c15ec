package runarchive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// RequestWriter streams a run's requests, one JSON line each, into
// requests.jsonl.partial; Close renames it requests.jsonl once complete
// (a crash leaves the partial file, which Finalize turns final). It is
// safe for concurrent use.
type RequestWriter struct {
	run *Run

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	enc     *json.Encoder
	err     error
	onError func(error)
}

// OnError has f called, once, with the first write error (Append, Flush),
// outside the writer's lock: the bench stops its load at once instead of
// running on without an archive.
func (w *RequestWriter) OnError(f func(error)) {
	w.mu.Lock()
	w.onError = f
	w.mu.Unlock()
}

// WrapFile has the lines go through wrap(file) (a test's failing writer).
func (w *RequestWriter) WrapFile(wrap func(io.Writer) io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w = bufio.NewWriterSize(wrap(w.f), 256<<10)
	w.enc = json.NewEncoder(w.w)
}

// failed keeps err as the first write error and returns the OnError
// function to call (nil when none, or when an error was kept before).
// w.mu is held.
func (w *RequestWriter) failed(err error) func(error) {
	if w.err != nil {
		return nil
	}
	w.err = fmt.Errorf("writing %s%s: %w", RequestsFile, PartialSuffix, err)
	return w.onError
}

// CreateRequests opens the run's requests.jsonl.partial for writing,
// refusing an existing one.
func (r *Run) CreateRequests() (*RequestWriter, error) {
	f, err := r.CreatePartial(RequestsFile)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", r.ID, err)
	}
	w := &RequestWriter{run: r, f: f, w: bufio.NewWriterSize(f, 256<<10)}
	w.enc = json.NewEncoder(w.w)
	return w, nil
}

// Append writes one request line. The first error sticks and is returned
// by Close; later lines are dropped (the caller keeps its records).
func (w *RequestWriter) Append(req *Request) {
	w.mu.Lock()
	var call func(error)
	if w.err == nil && w.enc != nil {
		if err := w.encode(req); err != nil {
			call = w.failed(err)
		}
	}
	err := w.err
	w.mu.Unlock()
	if call != nil {
		call(err)
	}
}

// encode writes req's line into the buffer: appendRequest's, straight
// into the buffer's free space, or encoding/json's where it declines.
// w.mu is held.
func (w *RequestWriter) encode(req *Request) error {
	if line, ok := appendRequest(w.w.AvailableBuffer(), req); ok {
		_, err := w.w.Write(line)
		return err
	}
	return w.enc.Encode(req)
}

// Flush pushes buffered lines to the file, so a crash loses little.
func (w *RequestWriter) Flush() {
	w.mu.Lock()
	var call func(error)
	if w.err == nil && w.w != nil {
		if err := w.w.Flush(); err != nil {
			call = w.failed(err)
		}
	}
	err := w.err
	w.mu.Unlock()
	if call != nil {
		call(err)
	}
}

// Close flushes, syncs and renames the file into place. After a write
// error the partial file stays (never passed off as complete). Closing
// again returns the first result.
func (w *RequestWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	f := w.f
	err := w.err
	if err == nil {
		err = w.w.Flush()
	}
	w.f, w.w, w.enc = nil, nil, nil
	if err != nil {
		f.Close()
		w.err = fmt.Errorf("run archive %s: requests: %w", w.run.Dir, err)
		return w.err
	}
	w.err = w.run.Commit(f, RequestsFile)
	return w.err
}
