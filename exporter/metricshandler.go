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
// encoded once per run (frozenTexts). With 100 retained runs that is ~4,000
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

// frozenText is what a text scrape serves for one family from the frozen
// runs: its HELP and TYPE lines (for when no live series brings them) and
// each frozen run's series, oldest run first.
type frozenText struct {
	header []byte
	parts  []*frozenPart
}

// frozenPart is one frozen run's series of one family: the sample lines,
// and the same text compressed once.
type frozenPart struct {
	samples []byte
	z       deflated
}

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
	// appendFrozen writes a family's frozen series (after its header or
	// the live series of the same family).
	appendFrozen := func(ft frozenText) {
		if gz == nil {
			for _, p := range ft.parts {
				_, _ = bw.Write(p.samples)
			}
			return
		}
		_ = bw.Flush()
		for _, p := range ft.parts {
			gz.splice(p.z)
		}
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
			_, _ = bw.Write(ft.header)
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

// frozenTexts returns the frozen runs' text per family, rebuilt when the
// set of frozen runs changed. Each run's text is encoded and compressed
// once, the first time it is needed: a run that freezes costs one run's
// encoding, an evicted run none.
func (e *Exporter) frozenTexts() map[string]frozenText {
	e.mu.RLock()
	defer e.mu.RUnlock()
	e.frozenMu.Lock()
	defer e.frozenMu.Unlock()
	if e.frozenTextCache != nil && e.frozenTextVersion == e.frozenVersion {
		return e.frozenTextCache
	}
	out := map[string]frozenText{}
	for _, id := range e.finished {
		r := e.runs[id]
		if r == nil || r.frozen == nil {
			continue
		}
		if r.frozen.text == nil {
			r.frozen.text = e.encodeFrozenRun(id, r.frozen)
		}
		for name, rt := range r.frozen.text {
			ft := out[name]
			if ft.header == nil {
				ft.header = rt.header
			}
			ft.parts = append(ft.parts, rt.part)
			out[name] = ft
		}
	}
	e.frozenTextCache, e.frozenTextVersion = out, e.frozenVersion
	return out
}

// runFamilyText is one frozen run's exposition of one family.
type runFamilyText struct {
	header []byte // HELP and TYPE lines
	part   *frozenPart
}

// encodeFrozenRun encodes (expfmt) and compresses a frozen run's series,
// per family, in label order.
func (e *Exporter) encodeFrozenRun(id string, fr *frozenRun) map[string]runFamilyText {
	out := make(map[string]runFamilyText, len(fr.families))
	var buf bytes.Buffer
	for name, ms := range fr.families {
		ms = slices.Clone(ms)
		slices.SortFunc(ms, compareMetrics)
		n, help, typ := name, familyHelp[name], dto.MetricType_GAUGE
		buf.Reset()
		if _, err := expfmt.MetricFamilyToText(&buf, &dto.MetricFamily{Name: &n, Help: &help, Type: &typ, Metric: ms}); err != nil {
			e.log.Error("encoding a finished run's family", "run_id", id, "family", name, "err", err)
			continue
		}
		full := bytes.Clone(buf.Bytes())
		if !bytes.HasPrefix(full, []byte("# HELP "+name+" ")) {
			e.log.Error("encoding a finished run's family: unexpected exposition header", "run_id", id, "family", name)
			continue
		}
		// the samples follow the "# HELP" and "# TYPE" lines
		cut := 0
		for range 2 {
			cut += bytes.IndexByte(full[cut:], '\n') + 1
		}
		samples := full[cut:]
		z, err := deflate(samples)
		if err != nil {
			e.log.Error("compressing a finished run's family", "run_id", id, "family", name, "err", err)
			continue
		}
		out[name] = runFamilyText{header: full[:cut:cut], part: &frozenPart{samples: samples, z: z}}
	}
	return out
}

// frozenLevel is the compression level of the frozen runs' text,
// compressed once per run rather than on every scrape.
const frozenLevel = flate.BestCompression

var frozenFlateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, frozenLevel)
	return w
}}

// deflated is a piece of text compressed on its own as raw deflate blocks
// (RFC 1951) that end on a byte boundary (a sync flush, no final block)
// and refer to no data before them, so they can be spliced into any
// deflate stream at a byte boundary.
type deflated struct {
	data  []byte
	crc   uint32 // CRC-32 (IEEE) of the text
	size  int    // length of the text
	shift uint32 // x^(8·size) modulo the CRC polynomial, for crc32Combine
}

func deflate(text []byte) (deflated, error) {
	var buf bytes.Buffer
	fw := frozenFlateWriters.Get().(*flate.Writer)
	defer frozenFlateWriters.Put(fw)
	fw.Reset(&buf)
	if _, err := fw.Write(text); err != nil {
		return deflated{}, fmt.Errorf("compressing: %w", err)
	}
	if err := fw.Flush(); err != nil {
		return deflated{}, fmt.Errorf("compressing: %w", err)
	}
	return deflated{data: buf.Bytes(), crc: crc32.ChecksumIEEE(text), size: len(text), shift: xPow8n(uint64(len(text)))}, nil
}

// gzipSplicer writes one gzip member (RFC 1952) whose deflate stream mixes
// text compressed as it is written with pieces compressed beforehand
// (splice). Before a piece, the compressor flushes to a byte boundary;
// after it, the compressor is reset so that it never refers back across
// the piece. The trailer's CRC-32 and size cover the whole text. Being one
// member, it decodes with any gzip reader, including the ones that stop
// after the first member of a multi-member stream.
type gzipSplicer struct {
	w     *bufio.Writer // many small pieces: one write per piece is too many
	fw    *flate.Writer
	crc   uint32
	size  uint32 // ISIZE: the text's length modulo 2^32
	dirty bool   // fw took text since it was last reset
	err   error
}

// gzipHeader is a minimal member header: deflate, no flags, no time,
// unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// newGzipSplicer writes the member header to w (buffered); fw is reset to
// write there.
func newGzipSplicer(w io.Writer, fw *flate.Writer) *gzipSplicer {
	g := &gzipSplicer{w: bufio.NewWriterSize(w, 32<<10), fw: fw}
	fw.Reset(g.w)
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
	g.crc = multModP(z.shift, g.crc) ^ z.crc // crc32Combine(g.crc, z.crc, z.size)
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
	if _, g.err = g.w.Write(trailer); g.err != nil {
		return g.err
	}
	g.err = g.w.Flush()
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
