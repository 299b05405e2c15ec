// Package secretfile reads a secret (token, password, API key) from a
// file. Errors name the file and the configuration field, never the content.
package secretfile

import (
	"fmt"
	"os"
	"strings"
)

// Read returns the content of file, surrounding white space trimmed; an
// empty secret is an error. field names the setting in errors
// ("api_key_file").
func Read(file, field string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", field, file)
	}
	return s, nil
}
