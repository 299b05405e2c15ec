package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
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
// series not re-encoded on every scrape. Every other request (protobuf,
// name[] filters) goes to promhttp unchanged.
type metricsHandler struct {
	e        *Exporter
	prom     http.Handler
	inFlight chan struct{}
}

// frozenText is the text exposition of one frozen family: full has the
// HELP and TYPE lines, samples only the sample lines.
type frozenText struct {
	full, samples []byte
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
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
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close()
			gzipWriters.Put(gz)
		}()
		out = gz
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	defer bw.Flush()

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
			if hasFrozen {
				_, _ = bw.Write(ft.samples)
			}
			continue
		}
		_, _ = bw.Write(ft.full)
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

// frozenTexts encodes every frozen family once per set of frozen runs.
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
		out[name] = frozenText{full: full, samples: rest}
	}
	e.frozenTextCache, e.frozenTextVersion = out, version
	return out
}
