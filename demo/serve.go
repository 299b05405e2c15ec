package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// localServer is an HTTP server on a random loopback port. Its address is
// known from listenLocal on, before it serves, so Prometheus can be told
// where to scrape before the exporter exists.
type localServer struct {
	url  string
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// listenLocal opens 127.0.0.1:0; what names it in errors.
func listenLocal(what string) (*localServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen on 127.0.0.1: %w", what, err)
	}
	return &localServer{url: "http://" + ln.Addr().String(), ln: ln}, nil
}

// serve starts serving h.
func (s *localServer) serve(h http.Handler) {
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan error, 1)
	go func() { s.done <- s.srv.Serve(s.ln) }()
}

// close shuts the server down, cutting connections still open after 5 s.
func (s *localServer) close() error {
	if s.srv == nil {
		return s.ln.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
