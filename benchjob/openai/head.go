package openai

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// The answer head of a streamed POST is read by http.ReadResponse, except
// for the plainest one, which is read in place without allocating: the
// whole head already buffered, "HTTP/1.1 200", a Content-Length, no
// Transfer-Encoding, Connection absent or keep-alive or close, no folded
// lines. Anything else (an error status, a chunked body, an odd header)
// goes to the standard library's parser as before.

// sizedBody is a plain answer's body: Content-Length bytes of the
// connection's reader.
type sizedBody struct{ io.LimitedReader }

// Read reads like io.LimitedReader, but the end of the connection before
// the last byte is io.ErrUnexpectedEOF, as net/http's body says.
func (b *sizedBody) Read(p []byte) (int, error) {
	n, err := b.LimitedReader.Read(p)
	if err == io.EOF && b.N > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close does nothing: the exchange's release keeps or closes the
// connection.
func (*sizedBody) Close() error { return nil }

// eventStream is the Content-Type value kept without a copy.
const eventStream = "text/event-stream"

// plainHead reads c's answer head when it is a plain one (see above) into
// c's reused response; nil when it is not (nothing was consumed).
func (c *conn) plainHead() *http.Response {
	buf, _ := c.br.Peek(c.br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 || !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
		return nil
	}
	rest := buf[:end+2]
	sl := bytes.IndexByte(rest, '\n') // the status line ends in CRLF, its reason is text
	if sl < 1 || rest[sl-1] != '\r' || !fieldValue(rest[:sl-1]) {
		return nil
	}
	rest = rest[sl+1:]
	n, ct, hasCT, closed := int64(-1), []byte(nil), false, false
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i]
		rest = rest[i+1:]
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return nil
		}
		line = line[:len(line)-1]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || line[0] == ' ' || line[0] == '\t' || line[colon-1] == ' ' {
			return nil
		}
		name, val := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !token(name) || !fieldValue(val) {
			return nil
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n >= 0 || len(val) == 0 || len(val) > 15 {
				return nil
			}
			n = 0
			for _, d := range val {
				if d < '0' || d > '9' {
					return nil
				}
				n = n*10 + int64(d-'0')
			}
		case bytes.EqualFold(name, []byte("Content-Type")):
			if hasCT {
				return nil
			}
			ct, hasCT = val, true
		case bytes.EqualFold(name, []byte("Connection")):
			switch {
			case bytes.EqualFold(val, []byte("close")):
				closed = true
			case !bytes.EqualFold(val, []byte("keep-alive")):
				return nil
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")), bytes.EqualFold(name, []byte("Trailer")):
			return nil
		}
	}
	if n < 0 {
		return nil
	}
	if c.hdr == nil {
		c.hdr = http.Header{"Content-Type": make([]string, 1)}
	}
	switch {
	case !hasCT:
		delete(c.hdr, "Content-Type")
	case string(ct) == eventStream:
		c.hdr["Content-Type"] = append(c.hdr["Content-Type"][:0], eventStream)
	default:
		c.hdr["Content-Type"] = append(c.hdr["Content-Type"][:0], string(ct))
	}
	c.body = sizedBody{io.LimitedReader{R: c.br, N: n}}
	c.resp = http.Response{Status: "200 OK", StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: c.hdr, Body: &c.body, ContentLength: n, Close: closed, Request: postRequest}
	_, _ = c.br.Discard(end + 4)
	return &c.resp
}

// token says whether b is an HTTP token (a header name).
func token(b []byte) bool {
	for _, c := range b {
		if !tokenByte[c] {
			return false
		}
	}
	return true
}

// tokenByte says which bytes a token may hold: the printable ASCII ones
// but the separators.
var tokenByte = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// fieldValue says whether b may be a header value: no control character
// but tab.
func fieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
