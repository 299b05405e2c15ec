package exporter

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// metricsHandler serves /metrics. Text-format scrapes (what Prometheus asks
// for unless it wants protobuf) take a fast path: the live families are
// gathered and encoded by client_golang/expfmt as usual, and the series of
// frozen (finished, immutable) runs are appended as text that expfmt
// encoded once, when the run froze. With 100 retained runs that is ~4,000
// series not re-encoded on every scrape. A gzip scrape does not compress
// them either: their text is also kept deflate-compressed and spliced into
// the response's single gzip member (see gzipSplicer), so only the live
// families are compressed per scrape. Every other request (protobuf,
// name[] filters) goes to promhttp unchanged.
type metricsHandler struct {
	e        *Exporter
	prom     http.Handler
	inFlight chan struct{}
}

// frozenText is the text exposition of one frozen family: full has the
// HELP and TYPE lines, samples only the sample lines (a suffix of full),
// and zSamples is samples compressed once.
type frozenText struct {
	full, samples []byte
	zSamples      deflated
}

// header returns the family's HELP and TYPE lines.
func (ft frozenText) header() []byte { return ft.full[:len(ft.full)-len(ft.samples)] }

// flateWriters hold the per-scrape compressors. BestSpeed: the live part
// is compressed on every scrape, the frozen part once at frozenLevel.
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

func newMetricsHandler(e *Exporter) *metricsHandler {
	prom := promhttp.HandlerFor(gatherer{e: e, withSelf: true}, promhttp.HandlerOpts{
		ErrorLog: slogErrorLog{e}, Registry: e.selfReg, MaxRequestsInFlight: 10,
	})
	return &metricsHandler{e: e, prom: prom, inFlight: make(chan struct{}, 10)}
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
	if format.FormatType() != expfmt.TypeTextPlain || r.URL.Query().Has("name[]") {
		h.prom.ServeHTTP(w, r)
		return
	}
	select {
	case h.inFlight <- struct{}{}:
		defer func() { <-h.inFlight }()
	default:
		http.Error(w, "Limit of concurrent requests reached (10), try again later.", http.StatusServiceUnavailable)
		return
	}
	h.e.freezeMu.RLock()
	live, err := gatherer{e: h.e, withSelf: true, skipFrozen: true}.gatherLocked()
	frozen := h.e.frozenTexts()
	h.e.freezeMu.RUnlock()
	if err != nil {
		h.prom.ServeHTTP(w, r) // promhttp reports gathering errors its usual way
		return
	}

	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", string(format))
	var (
		out io.Writer = w
		gz  *gzipSplicer
	)
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		fw := flateWriters.Get().(*flate.Writer)
		defer flateWriters.Put(fw)
		gz = newGzipSplicer(w, fw)
		out = gz
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	// appendFrozen writes a frozen family's samples (after its header or
	// the live series of the same family).
	appendFrozen := func(ft frozenText) {
		if gz == nil {
			_, _ = bw.Write(ft.samples)
			return
		}
		_ = bw.Flush()
		gz.splice(ft.zSamples)
	}
	defer func() {
		_ = bw.Flush()
		if gz != nil {
			if err := gz.Close(); err != nil {
				h.e.log.Debug("writing /metrics", "err", err)
			}
		}
	}()

	names := make([]string, 0, len(live)+len(frozen))
	byName := make(map[string]*dto.MetricFamily, len(live))
	for _, mf := range live {
		names = append(names, mf.GetName())
		byName[mf.GetName()] = mf
	}
	for name := range frozen {
		if byName[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ft, hasFrozen := frozen[name]
		if mf := byName[name]; mf != nil {
			if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
				h.e.log.Error("encoding /metrics", "family", name, "err", err)
				return
			}
		} else {
			_, _ = bw.Write(ft.header())
		}
		if hasFrozen {
			appendFrozen(ft)
		}
	}
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		return q > 0
	}
	return false
}

// frozenTexts encodes and compresses every frozen family once per set of
// frozen runs.
func (e *Exporter) frozenTexts() map[string]frozenText {
	fams, version := e.frozenFamilies()
	e.frozenMu.Lock()
	defer e.frozenMu.Unlock()
	if e.frozenTextCache != nil && e.frozenTextVersion == version {
		return e.frozenTextCache
	}
	out := make(map[string]frozenText, len(fams))
	for name, ms := range fams {
		n, help, typ := name, familyHelp[name], dto.MetricType_GAUGE
		var buf bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&buf, &dto.MetricFamily{Name: &n, Help: &help, Type: &typ, Metric: ms}); err != nil {
			e.log.Error("encoding a frozen family", "family", name, "err", err)
			continue
		}
		full := buf.Bytes()
		// drop the "# HELP" and "# TYPE" lines
		rest := full
		for range 2 {
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				rest = rest[i+1:]
			}
		}
		if !bytes.HasPrefix(full, []byte("# HELP "+name+" ")) {
			e.log.Error("encoding a frozen family: unexpected exposition header", "family", name)
			continue
		}
		z, err := deflate(rest)
		if err != nil {
			e.log.Error("compressing a frozen family", "family", name, "err", err)
			continue
		}
		out[name] = frozenText{full: full, samples: rest, zSamples: z}
	}
	e.frozenTextCache, e.frozenTextVersion = out, version
	return out
}

// frozenLevel is the compression level of the frozen families' text,
// compressed once per set of frozen runs rather than on every scrape.
const frozenLevel = flate.DefaultCompression

// deflated is a piece of text compressed on its own as raw deflate blocks
// (RFC 1951) that end on a byte boundary (a sync flush, no final block)
// and refer to no data before them, so they can be spliced into any
// deflate stream at a byte boundary.
type deflated struct {
	data []byte
	crc  uint32 // CRC-32 (IEEE) of the text
	size int    // length of the text
}

func deflate(text []byte) (deflated, error) {
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, frozenLevel)
	if err != nil {
		return deflated{}, fmt.Errorf("compressing: %w", err)
	}
	if _, err := fw.Write(text); err != nil {
		return deflated{}, fmt.Errorf("compressing: %w", err)
	}
	if err := fw.Flush(); err != nil {
		return deflated{}, fmt.Errorf("compressing: %w", err)
	}
	return deflated{data: buf.Bytes(), crc: crc32.ChecksumIEEE(text), size: len(text)}, nil
}

// gzipSplicer writes one gzip member (RFC 1952) whose deflate stream mixes
// text compressed as it is written with pieces compressed beforehand
// (splice). Before a piece, the compressor flushes to a byte boundary;
// after it, the compressor is reset so that it never refers back across
// the piece. The trailer's CRC-32 and size cover the whole text. Being one
// member, it decodes with any gzip reader, including the ones that stop
// after the first member of a multi-member stream.
type gzipSplicer struct {
	w     io.Writer
	fw    *flate.Writer
	crc   uint32
	size  uint32 // ISIZE: the text's length modulo 2^32
	dirty bool   // fw took text since it was last reset
	err   error
}

// gzipHeader is a minimal member header: deflate, no flags, no time,
// unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// newGzipSplicer writes the member header to w; fw is reset to write to w.
func newGzipSplicer(w io.Writer, fw *flate.Writer) *gzipSplicer {
	g := &gzipSplicer{w: w, fw: fw}
	fw.Reset(w)
	_, g.err = w.Write(gzipHeader)
	return g
}

// Write compresses p.
func (g *gzipSplicer) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint32(len(p))
	g.dirty = true
	n, err := g.fw.Write(p)
	g.err = err
	return n, err
}

// splice writes a piece compressed beforehand.
func (g *gzipSplicer) splice(z deflated) {
	if g.err != nil {
		return
	}
	if g.dirty {
		if g.err = g.fw.Flush(); g.err != nil {
			return
		}
		g.fw.Reset(g.w)
		g.dirty = false
	}
	if _, g.err = g.w.Write(z.data); g.err != nil {
		return
	}
	g.crc = crc32Combine(g.crc, z.crc, z.size)
	g.size += uint32(z.size)
}

// Close ends the deflate stream with a final block and writes the trailer.
func (g *gzipSplicer) Close() error {
	if g.err != nil {
		return g.err
	}
	if g.err = g.fw.Close(); g.err != nil {
		return g.err
	}
	trailer := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, g.crc), g.size)
	_, g.err = g.w.Write(trailer)
	return g.err
}

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from crcA,
// crcB and the length of B, as zlib's crc32_combine does: crcA is
// multiplied by x^(8·lenB) modulo the CRC polynomial (the effect of
// running lenB more bytes through the register), then crcB is added.
func crc32Combine(crcA, crcB uint32, lenB int) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(xPow8n(uint64(lenB)), crcA) ^ crcB
}

// multModP multiplies two polynomials modulo the reflected CRC-32 (IEEE)
// polynomial; bit 31 is x^0.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow8n returns x^(8n) modulo the CRC-32 (IEEE) polynomial, by squaring.
func xPow8n(n uint64) uint32 {
	p := uint32(1) << 31  // x^0
	sq := uint32(1) << 23 // x^8
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			p = multModP(sq, p)
		}
		sq = multModP(sq, sq)
	}
	return p
}
