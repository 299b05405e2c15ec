package openai

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr error
	}{
		{"single", "data: a\n\n", []string{"a"}, io.EOF},
		{"no space after colon", "data:a\n\n", []string{"a"}, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}, io.EOF},
		{"comments and other fields", ": ping\nid: 1\nretry: 10\ndata: x\n\n", []string{"x"}, io.EOF},
		{"blank lines between", "\n\ndata: x\n\n\n\ndata: y\n\n", []string{"x", "y"}, io.EOF},
		{"field without colon", "data\n\n", []string{""}, io.EOF},
		{"truncated in event", "data: a\n\ndata: b\n", []string{"a"}, io.ErrUnexpectedEOF},
		{"truncated mid line", "data: a\n\ndata: {\"x", []string{"a"}, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in), 0)
			var got []string
			var err error
			for {
				var ev Event
				ev, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, string(ev.Data))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("end error = %v, want %v", err, tt.wantErr)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSSEReaderEventName(t *testing.T) {
	r := NewSSEReader(strings.NewReader("event: error\ndata: boom\n\ndata: ok\n\n"), 0)
	ev, err := r.Next()
	if err != nil || ev.Name != "error" || string(ev.Data) != "boom" {
		t.Fatalf("first = %q %q %v", ev.Name, ev.Data, err)
	}
	ev, err = r.Next()
	if err != nil || ev.Name != "" || string(ev.Data) != "ok" {
		t.Fatalf("second = %q %q %v (the name must not leak into the next event)", ev.Name, ev.Data, err)
	}
}

func TestSSEReaderLineTooLong(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100<<10) + "\n\n"
	r := NewSSEReader(strings.NewReader(in), 64<<10)
	if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	// Under the limit a long line (bigger than the read buffer) is whole.
	r = NewSSEReader(strings.NewReader(in), 1<<20)
	ev, err := r.Next()
	if err != nil || len(ev.Data) != 100<<10 {
		t.Fatalf("len = %d, err = %v", len(ev.Data), err)
	}
}

// FuzzSSEReader checks the parser never panics or loops, and that every
// event it returns came from "data" lines of the input.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "data:{\"x\":1}\r\n\r\n", ": c\n\ndata\n\n", "data: a\ndata: b\n", "event: e\ndata: [DONE]\n\n", "\r\r\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := NewSSEReader(strings.NewReader(in), 1<<10)
		total := 0
		for i := 0; i <= len(in)+1; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			total += len(ev.Data)
			if total > len(in) {
				t.Fatalf("events carry %d bytes from %d input bytes", total, len(in))
			}
		}
		t.Fatalf("more events than input lines")
	})
}
