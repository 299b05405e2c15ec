package openai

import (
	"bytes"
	"io"
)

// idleReader pushes the watch's idle deadline when the stream shows progress: a
// line that is neither an SSE comment (":" first, an engine's keep-alive)
// nor blank. An engine trickling comments forever is idle (issue 33: a
// comment every 5 s kept a request alive for good). It scans line starts
// only (bytes.IndexByte), not every byte.
type idleReader struct {
	r io.Reader
	w *watch

	lineStart bool // the next byte starts a line
	comment   bool // the current line is a comment
}

func newIdleReader(r io.Reader, w *watch) idleReader {
	return idleReader{r: r, w: w, lineStart: true}
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 && ir.progress(p[:n]) {
		ir.w.progress()
	}
	return n, err
}

// progress follows the lines of b and reports whether any of it is
// content outside comments.
func (ir *idleReader) progress(b []byte) bool {
	seen := false
	for len(b) > 0 {
		if ir.lineStart {
			ir.lineStart, ir.comment = false, b[0] == ':'
		}
		line, rest, full := bytes.Cut(b, []byte{'\n'})
		if !ir.comment && len(bytes.TrimRight(line, "\r")) > 0 {
			seen = true
		}
		if !full {
			break
		}
		b, ir.lineStart = rest, true
	}
	return seen
}
