package openai

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
)

// FuzzPlainHead holds the plain-head fast path to http.ReadResponse: what
// it takes, the standard library reads the same way (status, length,
// Close, Content-Type, body).
func FuzzPlainHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/event-stream\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\ncontent-type: text/plain\r\n\r\nhi"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nhi"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, answer []byte) {
		c := &conn{br: bufio.NewReaderSize(bytes.NewReader(answer), 4<<10)}
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		got := c.plainHead()
		if got == nil {
			return
		}
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(answer)), postRequest)
		if err != nil {
			t.Fatalf("%q: fast path took it, http.ReadResponse: %v", answer, err)
		}
		if got.StatusCode != want.StatusCode || got.ContentLength != want.ContentLength || got.Close != want.Close ||
			got.Header.Get("Content-Type") != want.Header.Get("Content-Type") {
			t.Fatalf("%q: fast path %d %d %v %q, http.ReadResponse %d %d %v %q", answer, got.StatusCode, got.ContentLength, got.Close,
				got.Header.Get("Content-Type"), want.StatusCode, want.ContentLength, want.Close, want.Header.Get("Content-Type"))
		}
		gb, gerr := io.ReadAll(got.Body)
		wb, werr := io.ReadAll(want.Body)
		if !bytes.Equal(gb, wb) || (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: body %q (%v), http.ReadResponse %q (%v)", answer, gb, gerr, wb, werr)
		}
	})
}

// TestTokenBytes: the table holds RFC 9110's tchar, byte by byte.
func TestTokenBytes(t *testing.T) {
	for c := range 256 {
		want := c > ' ' && c < 0x7f && !bytes.ContainsRune([]byte(`"(),/:;<=>?@[\]{}`), rune(c))
		if token([]byte{byte(c)}) != want {
			t.Errorf("byte %#x: token %v, want %v", c, !want, want)
		}
	}
}
