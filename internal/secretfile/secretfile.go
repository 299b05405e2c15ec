// Package secretfile reads a secret (token, password, API key) from a
// file, and keeps secrets out of messages. Errors name the file and the
// configuration field, never the content.
package secretfile

import (
	"fmt"
	"io/fs"
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

// Exposed reports whether file is readable by every user of the host (mode
// o+r), with its mode; false when it cannot be stat'ed (reading it will
// say why).
func Exposed(file string) (bool, fs.FileMode) {
	st, err := os.Stat(file)
	if err != nil {
		return false, 0
	}
	return st.Mode().Perm()&0o004 != 0, st.Mode().Perm()
}
