package secretfile

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces every secret in a shown URL.
const Redacted = "xxxxx"

// secretParams are the substrings of a query parameter's name (lower case)
// that make its value a secret: ?token=, ?api_key=, ?X-Amz-Signature=…
var secretParams = []string{"token", "key", "pass", "secret", "sig", "auth", "credential"}

// RedactURL is raw with the password of its user info and the value of
// every query parameter whose name carries a secret (token, key, password,
// secret, signature, auth, credential) replaced by "xxxxx"; a URL that does
// not parse loses everything before its last '@' and its query. It is the
// one redaction: every URL a message, a log line, an archive or a report
// shows goes through it (or through Scrub, which removes the same secrets
// from text).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndexByte(raw, '@'); i >= 0 {
			raw = Redacted + raw[i:]
		}
		if i := strings.IndexByte(raw, '?'); i >= 0 {
			raw = raw[:i+1] + Redacted
		}
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	}
	if i := strings.LastIndexByte(u.Opaque, '@'); i >= 0 { // "user:pass@host", no scheme
		u.Opaque = Redacted + u.Opaque[i:]
	}
	u.RawQuery = redactQuery(u.RawQuery)
	return u.String()
}

// redactQuery replaces the values of secret parameters in a raw query,
// keeping the order and encoding of the others.
func redactQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		name, _, ok := strings.Cut(p, "=")
		if ok && secretParam(name) {
			parts[i] = name + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

func secretParam(raw string) bool {
	name, err := url.QueryUnescape(raw)
	if err != nil {
		name = raw
	}
	name = strings.ToLower(name)
	for _, s := range secretParams {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// minScrubbed is the shortest secret Scrub replaces in free text: a shorter
// one would replace ordinary words (the URL itself is still redacted
// wherever it is shown).
const minScrubbed = 4

// Secrets are the secret values of URLs, as they may appear in text: each
// raw (as escaped in the URL) and unescaped.
type Secrets []string

// SecretsOf collects the password and the secret query values of each URL
// (RedactURL's), the empty and too-short ones left out.
func SecretsOf(urls ...string) Secrets {
	var out Secrets
	add := func(raw, plain string) {
		for _, s := range []string{raw, plain} {
			if len(s) >= minScrubbed {
				out = append(out, s)
			}
		}
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if p, ok := u.User.Password(); ok {
			add(url.PathEscape(p), p)
		}
		if i := strings.LastIndexByte(u.Opaque, '@'); i >= 0 {
			add(u.Opaque[:i], u.Opaque[:i])
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			name, v, ok := strings.Cut(kv, "=")
			if ok && secretParam(name) {
				plain, _ := url.QueryUnescape(v)
				add(v, plain)
			}
		}
	}
	// Longest first: a secret holding another is replaced whole, not
	// around the shorter one's xxxxx.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Scrub replaces every secret in s by "xxxxx".
func (ss Secrets) Scrub(s string) string {
	for _, x := range ss {
		s = strings.ReplaceAll(s, x, Redacted)
	}
	return s
}

// Error is err with its message scrubbed (nil for nil); errors.Is and As
// still see the original chain.
func (ss Secrets) Error(err error) error {
	if err == nil || len(ss) == 0 {
		return err
	}
	return &scrubbed{msg: ss.Scrub(err.Error()), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Logger is log with the message and every attribute of each record
// scrubbed: a library's error that quotes a URL loses its secrets too.
func (ss Secrets) Logger(log *slog.Logger) *slog.Logger {
	if len(ss) == 0 || log == nil {
		return log
	}
	return slog.New(scrubHandler{next: log.Handler(), ss: ss})
}

type scrubHandler struct {
	next slog.Handler
	ss   Secrets
}

func (h scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.ss.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return scrubHandler{next: h.next.WithAttrs(clean), ss: h.ss}
}

func (h scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{next: h.next.WithGroup(name), ss: h.ss}
}

// attr scrubs a string, error or Stringer value, and groups recursively.
func (h scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.ss.Scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = h.attr(x)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.ss.Scrub(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.ss.Scrub(x.String()))
		}
	}
	return a
}
