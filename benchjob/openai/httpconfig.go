package openai

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/secretfile"
)

// settings is Config.HTTP (and Config.APIKey) read once, when the client is
// made: the TLS configuration, the proxy, and the header lines every
// request carries. Secrets are read from their files here, never per
// request, and never appear in errors.
type settings struct {
	tls         *tls.Config
	proxy       func(*http.Request) (*url.URL, error)
	proxyHeader http.Header
	header      http.Header // Authorization and http_headers: for net/http requests
	lines       []byte      // the same as header lines: for the prebuilt heads
}

// readSettings checks cfg.HTTP and reads its secrets. The engine client
// supports tls_config, authorization, basic_auth, http_headers and the
// proxy settings; oauth2 and secrets from a secret manager (*_ref) are
// errors. Without proxy settings the environment's proxy applies, as
// before (HTTP_PROXY, HTTPS_PROXY, NO_PROXY).
func readSettings(cfg *Config, base *url.URL) (*settings, error) {
	hc := cfg.HTTP
	if hc.Authorization != nil {
		a := *hc.Authorization
		hc.Authorization = &a
	}
	if err := hc.Validate(); err != nil {
		return nil, fmt.Errorf("target HTTP client config: %w", err)
	}
	if hc.OAuth2 != nil {
		return nil, errors.New("target HTTP client config: oauth2 is not supported for the engine (use authorization or basic_auth)")
	}
	s := &settings{header: http.Header{}}
	auth, authFrom, err := authorization(&hc)
	if err != nil {
		return nil, fmt.Errorf("target HTTP client config: %w", err)
	}
	if cfg.APIKey != "" {
		if auth != "" {
			return nil, fmt.Errorf("target: the API key and %s in the HTTP client config both set the Authorization header: give one", authFrom)
		}
		auth = "Bearer " + cfg.APIKey
	}
	if auth != "" && base.User != nil {
		return nil, errors.New("target: user:password in the URL and an API key or authorization in the HTTP client config: give one")
	}
	if auth != "" {
		s.header.Set("Authorization", auth)
	}
	if err := headers(hc.HTTPHeaders, s.header); err != nil {
		return nil, fmt.Errorf("target HTTP client config: %w", err)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range s.header {
			if !yield(n) {
				return
			}
		}
	}) {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return nil, fmt.Errorf("target: header name %q is not valid", name)
		}
		for _, v := range s.header[name] {
			if strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf("target: header %s: line breaks are not allowed in a header value", name)
			}
			s.lines = append(s.lines, name+": "+v+"\r\n"...)
		}
	}
	if s.tls, err = config.NewTLSConfig(&hc.TLSConfig); err != nil {
		return nil, fmt.Errorf("target HTTP client config: tls_config: %w", err)
	}
	s.proxy = http.ProxyFromEnvironment
	if hc.ProxyFromEnvironment || (hc.ProxyURL.URL != nil && hc.ProxyURL.String() != "") {
		s.proxy = hc.Proxy()
		s.proxyHeader = hc.GetProxyConnectHeader()
	}
	return s, nil
}

// authorization is the Authorization header value of c's authorization or
// basic_auth section (empty without one) and the section's name.
func authorization(c *config.HTTPClientConfig) (string, string, error) {
	switch {
	case c.Authorization != nil:
		a := c.Authorization
		if a.CredentialsRef != "" {
			return "", "", errors.New("authorization.credentials_ref: no secret manager here, use credentials_file")
		}
		cred, err := secret(string(a.Credentials), a.CredentialsFile, "authorization.credentials_file")
		if err != nil {
			return "", "", err
		}
		if cred == "" {
			return "", "", errors.New("authorization: no credentials or credentials_file")
		}
		return a.Type + " " + cred, "authorization", nil
	case c.BasicAuth != nil:
		b := c.BasicAuth
		if b.UsernameRef != "" || b.PasswordRef != "" {
			return "", "", errors.New("basic_auth: username_ref and password_ref need a secret manager, use username_file, password_file")
		}
		user, err := secret(b.Username, b.UsernameFile, "basic_auth.username_file")
		if err != nil {
			return "", "", err
		}
		pass, err := secret(string(b.Password), b.PasswordFile, "basic_auth.password_file")
		if err != nil {
			return "", "", err
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)), "basic_auth", nil
	}
	return "", "", nil
}

// headers adds the http_headers values (from the config and from files) to h.
func headers(hs *config.Headers, h http.Header) error {
	if hs == nil {
		return nil
	}
	for name, v := range hs.Headers {
		name = http.CanonicalHeaderKey(name)
		for _, s := range v.Values {
			h.Add(name, s)
		}
		for _, s := range v.Secrets {
			h.Add(name, string(s))
		}
		for _, f := range v.Files {
			s, err := secret("", f, "http_headers."+name+".files")
			if err != nil {
				return err
			}
			h.Add(name, s)
		}
	}
	return nil
}

// secret is inline, else the trimmed content of file (field names it in
// errors, which never carry the content).
func secret(inline, file, field string) (string, error) {
	if file == "" {
		return inline, nil
	}
	return secretfile.Read(file, field)
}
