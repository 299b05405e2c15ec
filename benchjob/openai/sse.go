package openai

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned when one SSE line exceeds the reader's limit.
var ErrLineTooLong = errors.New("sse: line too long")

// Event is one server-sent event: the data lines of one block, joined by
// "\n" as the SSE specification says. Data is only valid until the next call
// to Next.
type Event struct {
	Name string
	Data []byte
}

// SSEReader parses a text/event-stream. It keeps no per-event allocation on
// the hot path: the data buffer is reused between events.
type SSEReader struct {
	r       *bufio.Reader
	maxLine int
	data    []byte
	name    []byte
	hasData bool
	long    []byte
}

// NewSSEReader returns a parser reading r; lines longer than maxLine bytes
// (default 4 MiB when maxLine <= 0) are an error.
func NewSSEReader(r io.Reader, maxLine int) *SSEReader {
	if maxLine <= 0 {
		maxLine = 4 << 20
	}
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10), maxLine: maxLine}
}

// Reset makes the parser read from r, keeping its buffers.
func (s *SSEReader) Reset(r io.Reader) {
	s.r.Reset(r)
	s.data = s.data[:0]
	s.name = s.name[:0]
	s.hasData = false
}

// Next returns the next event. At the end of the stream it returns io.EOF
// when the stream ended on an event boundary, and io.ErrUnexpectedEOF when
// it stopped inside an event (a truncated stream). Other read errors are
// returned as they are.
func (s *SSEReader) Next() (Event, error) {
	s.data = s.data[:0]
	s.name = s.name[:0]
	s.hasData = false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF {
				if s.hasData || len(line) > 0 {
					return Event{}, io.ErrUnexpectedEOF
				}
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if !s.hasData {
				s.name = s.name[:0]
				continue
			}
			return Event{Name: string(s.name), Data: s.data}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.name = append(s.name[:0], value...)
		}
	}
}

// readLine returns one line without its terminator (LF, CRLF or a lone CR at
// the end of a read chunk). The returned slice is valid until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > s.maxLine {
				return nil, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, s.maxLine)
			}
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			// A final line without terminator: the stream was cut.
			return line, io.EOF
		}
		return nil, err
	}
	if len(line) > s.maxLine {
		return nil, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, s.maxLine)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
