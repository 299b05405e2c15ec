package benchjob

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// withTargetHint adds the likely fix to an error of the engine's API: a
// 404 from a target whose path does not end in /v1 is the OpenAI base URL
// without its version (http://host:8000 for http://host:8000/v1).
func withTargetHint(target string, err error) error {
	var se *openai.StatusError
	if err == nil || !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		return err
	}
	u, perr := url.Parse(target)
	if perr != nil || strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return err
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1"
	return fmt.Errorf("%w (--target is the OpenAI-compatible base URL, which ends in /v1: did you mean %s?)", err, secretfile.RedactURL(u.String()))
}
