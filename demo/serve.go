package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// localServer is an HTTP server on a random loopback port.
type localServer struct {
	url  string
	srv  *http.Server
	done chan error
}

// serveLocal serves h on 127.0.0.1:0; what names it in errors.
func serveLocal(what string, h http.Handler) (*localServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen on 127.0.0.1: %w", what, err)
	}
	s := &localServer{
		url:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// close shuts the server down, cutting connections still open after 5 s.
func (s *localServer) close() error {
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
