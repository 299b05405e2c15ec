package simengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/joulemark/joulemark/internal/version"
)

// Handler serves the engine's HTTP API: /v1/completions,
// /v1/chat/completions, /v1/models, /health, /version and /metrics (the
// engine's registry plus extra, e.g. Go runtime collectors; extra may be nil).
func (e *Engine) Handler(extra prometheus.Gatherer) http.Handler {
	var g prometheus.Gatherer = e.reg
	if extra != nil {
		g = prometheus.Gatherers{e.reg, extra}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", e.serveCompletion)
	mux.HandleFunc("POST /v1/chat/completions", e.serveChat)
	mux.HandleFunc("GET /v1/models", e.serveModels)
	mux.HandleFunc("GET /health", e.serveHealth)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// A bare version, as vLLM's /version: the engine is named by owned_by.
		v, _, _ := version.Info()
		_ = json.NewEncoder(w).Encode(map[string]string{"version": "sim " + cmp.Or(v, "devel")})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

func (e *Engine) serveHealth(w http.ResponseWriter, _ *http.Request) {
	if !e.Serving() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "engine is not serving: "+e.State().String()+"\n")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (e *Engine) serveModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(modelList{Object: "list", Data: []modelCard{{
		ID: e.cfg.Model, Object: "model", Created: e.created.Unix(), OwnedBy: "joulemark", Root: e.cfg.Model, MaxModelLen: e.cfg.MaxModelLen,
	}}})
}

func (e *Engine) serveCompletion(w http.ResponseWriter, r *http.Request) {
	e.serve(w, r, &completionRequest{}, false)
}

func (e *Engine) serveChat(w http.ResponseWriter, r *http.Request) {
	e.serve(w, r, &chatRequest{}, true)
}

// serve decodes the body into req (a *completionRequest or *chatRequest),
// then validates, submits and answers it.
func (e *Engine) serve(w http.ResponseWriter, r *http.Request, req apiRequest, chat bool) {
	if err := decodeJSON(w, r, req); err != nil {
		writeRequestError(w, err)
		return
	}
	n, err := req.promptTokens()
	if err != nil {
		writeRequestError(w, err)
		return
	}
	p := req.params()
	rq, err := e.validate(p, n, chat)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	if d := e.cfg.FrontendDelay; d > 0 {
		// A router or proxy in front of the engine: the client waits, the
		// engine does not know yet.
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	s, err := e.submit(rq)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	// The sequence leaves the batch when the handler returns early: client
	// gone, write failed, or the response cut by a fault.
	defer e.cancel(s)
	if p.Stream {
		e.stream(w, r, s, p, chat)
		return
	}
	e.respond(w, r, s, chat)
}

// stream writes the response as server-sent events the way vLLM does: one
// "data: {json}" chunk per token (chat starts with a role chunk), the
// finish_reason on the last token's chunk, then with
// stream_options.include_usage a chunk with empty choices and the usage, then
// "data: [DONE]".
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, s *seq, p *commonParams, chat bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	includeUsage := p.StreamOptions != nil && p.StreamOptions.IncludeUsage
	sw := &sseWriter{w: w, s: s, model: e.cfg.Model, chat: chat,
		includeUsage: includeUsage, continuous: includeUsage && p.StreamOptions.ContinuousUsageStats}

	sent := 0
	for {
		gen, finish, ok := e.await(r, s)
		if !ok {
			return
		}
		if sent, ok = sw.tokens(rc, sent, gen, finish); !ok {
			return
		}
		if finish == "" {
			if rc.Flush() != nil {
				return
			}
			continue
		}
		if sw.end(gen, finish) {
			_ = rc.Flush()
		}
		return
	}
}

// sseWriter writes one streamed response's chunks.
type sseWriter struct {
	w                        io.Writer
	s                        *seq
	model                    string
	chat                     bool
	includeUsage, continuous bool
}

// write sends one "data:" event; false when the client went away.
func (sw *sseWriter) write(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("simengine: marshal chunk: %v", err)) // our own types: cannot fail
	}
	_, err = fmt.Fprintf(sw.w, "data: %s\n\n", b)
	return err == nil
}

// chunk sends one token's (or the role's, or the finish's) chunk.
func (sw *sseWriter) chunk(text string, role bool, finish *string, u *usage) bool {
	s := sw.s
	if sw.chat {
		c := chatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: sw.model, Usage: u,
			Choices: []chatChunkChoice{{Delta: chatDelta{Content: &text}, FinishReason: finish}}}
		if role {
			c.Choices[0].Delta.Role = "assistant"
		}
		return sw.write(c)
	}
	return sw.write(completionChunk{ID: s.id, Object: "text_completion", Created: s.created, Model: sw.model, Usage: u,
		Choices: []completionChoice{{Text: text, FinishReason: finish}}})
}

// usage is the running usage of continuous usage stats, else nil.
func (sw *sseWriter) usage(n int) *usage {
	if sw.continuous {
		return sw.s.usage(n)
	}
	return nil
}

// tokens sends the tokens [sent, gen) and returns how many were sent in
// all; ok is false when the client went away. At the sequence's truncation
// point it cuts the connection: no finish, usage or [DONE].
func (sw *sseWriter) tokens(rc *http.ResponseController, sent, gen int, finish string) (int, bool) {
	for ; sent < gen; sent++ {
		if sent == sw.s.truncateAt {
			_ = rc.Flush()
			panic(http.ErrAbortHandler)
		}
		if sw.chat && sent == 0 && !sw.chunk("", true, nil, sw.usage(0)) {
			return sent, false
		}
		var fr *string
		if sent == gen-1 && (finish == "stop" || finish == "length") {
			fr = &finish
		}
		if !sw.chunk(sw.s.text(sent, sent+1), false, fr, sw.usage(sent+1)) {
			return sent, false
		}
	}
	return sent, true
}

// end sends an abort's finish chunk, the usage chunk and [DONE]; false when
// the client went away.
func (sw *sseWriter) end(gen int, finish string) bool {
	if finish == "abort" && !sw.chunk("", false, &finish, sw.usage(gen)) {
		return false
	}
	if sw.includeUsage {
		s, u := sw.s, sw.s.usage(gen)
		var ok bool
		if sw.chat {
			ok = sw.write(chatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: sw.model, Choices: []chatChunkChoice{}, Usage: u})
		} else {
			ok = sw.write(completionChunk{ID: s.id, Object: "text_completion", Created: s.created, Model: sw.model, Choices: []completionChoice{}, Usage: u})
		}
		if !ok {
			return false
		}
	}
	_, err := io.WriteString(sw.w, "data: [DONE]\n\n")
	return err == nil
}

// await waits for s to progress and returns the tokens generated so far and
// the finish reason; ok is false when the client went away first.
func (e *Engine) await(r *http.Request, s *seq) (gen int, finish string, ok bool) {
	select {
	case <-s.notify:
	case <-r.Context().Done():
		return 0, "", false
	}
	gen, finish = e.progress(s)
	return gen, finish, true
}

// respond waits for the whole completion and writes one JSON document.
func (e *Engine) respond(w http.ResponseWriter, r *http.Request, s *seq, chat bool) {
	for {
		gen, finish, ok := e.await(r, s)
		if !ok {
			return
		}
		if s.truncateAt >= 0 && gen >= s.truncateAt {
			panic(http.ErrAbortHandler) // cut the connection before any byte
		}
		if finish == "" {
			continue
		}
		if finish == "abort" {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "request aborted: engine shutting down")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if chat {
			_ = json.NewEncoder(w).Encode(chatResponse{ID: s.id, Object: "chat.completion", Created: s.created, Model: e.cfg.Model,
				Choices: []chatChoice{{Message: chatResponseMessage{Role: "assistant", Content: s.text(0, gen)}, FinishReason: finish}},
				Usage:   *s.usage(gen)})
			return
		}
		_ = json.NewEncoder(w).Encode(completionChunk{ID: s.id, Object: "text_completion", Created: s.created, Model: e.cfg.Model,
			Choices: []completionChoice{{Text: s.text(0, gen), FinishReason: &finish}}, Usage: s.usage(gen)})
		return
	}
}

// Serve starts e, serves its API on ln until ctx ends, then stops the
// engine (aborting requests, shutdown delay) and the HTTP server.
func Serve(ctx context.Context, ln net.Listener, e *Engine, extra prometheus.Gatherer, logger *slog.Logger) error {
	srv := &http.Server{Handler: e.Handler(extra), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if err := e.Start(); err != nil {
		_ = srv.Close()
		return err
	}
	logger.Info("simulated engine loading weights", "address", ln.Addr().String(), "model", e.cfg.Model, "startup_delay", e.cfg.StartupDelay)
	go func() {
		if e.WaitReady(ctx) == nil {
			logger.Info("simulated engine ready", "address", ln.Addr().String())
		}
	}()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		serveErr = fmt.Errorf("sim-engine: serve %s: %w", ln.Addr(), serveErr)
	}
	logger.Info("simulated engine shutting down", "shutdown_delay", e.cfg.ShutdownDelay)
	sctx, cancel := context.WithTimeout(context.Background(), e.cfg.ShutdownDelay+10*time.Second)
	defer cancel()
	stopErr := e.Stop(sctx)
	if err := srv.Shutdown(sctx); err != nil && serveErr == nil {
		serveErr = fmt.Errorf("sim-engine: http shutdown: %w", err)
	}
	return errors.Join(serveErr, stopErr)
}
