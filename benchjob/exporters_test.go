package benchjob

import (
	"net/url"
	"testing"

	"github.com/prometheus/common/config"
)

// The phase token moves to X-Joulemark-Token whenever the exporters' HTTP
// config takes the Authorization header, as `phase` and `runs finalize`
// decide (clientflags.Exporter.TokenHeader); an oauth2 config used to keep
// it in Authorization, where oauth2's own token replaced it.
func TestExporterClientTokenHeader(t *testing.T) {
	tokenURL, _ := url.Parse("http://127.0.0.1:1/token")
	for _, tc := range []struct {
		name string
		hc   config.HTTPClientConfig
		want bool
	}{
		{"none", config.HTTPClientConfig{}, false},
		{"basic_auth", config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "u", Password: "p"}}, true},
		{"authorization", config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Bearer", Credentials: "c"}}, true},
		{"oauth2", config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "s", TokenURL: tokenURL.String()}}, true},
	} {
		_, got, err := exporterClient(tc.hc, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: token in X-Joulemark-Token %v, want %v", tc.name, got, tc.want)
		}
	}
}
