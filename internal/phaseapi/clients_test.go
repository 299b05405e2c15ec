package phaseapi

import (
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/common/config"
)

// The token moves to TokenHeader whenever the HTTP config takes the
// Authorization header; an oauth2 config used to keep it in Authorization,
// where oauth2's own token replaced it.
func TestClientsTokenHeader(t *testing.T) {
	tokenURL, _ := url.Parse("http://127.0.0.1:1/token")
	for _, tc := range []struct {
		name string
		hc   config.HTTPClientConfig
		want bool
	}{
		{"none", config.HTTPClientConfig{}, false},
		{"basic_auth", config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "u", Password: "p"}}, true},
		{"authorization", config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Bearer", Credentials: "c"}}, true},
		{"bearer_token_file", config.HTTPClientConfig{BearerTokenFile: "/nonexistent"}, true},
		{"oauth2", config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "s", TokenURL: tokenURL.String()}}, true},
	} {
		c, err := NewClients(tc.hc, "t", "test", time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.TokenInHeader(); got != tc.want {
			t.Errorf("%s: token in %s %v, want %v", tc.name, TokenHeader, got, tc.want)
		}
	}
}
