// Package secretfile reads a secret (token, password, API key) from a
// file, and keeps secrets out of messages. Errors name the file and the
// configuration field, never the content.
package secretfile

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode"
)

// Read returns the content of file, surrounding white space trimmed; an
// empty secret is an error. field names the setting in errors
// ("api_key_file"). A password or a header value may hold spaces; a token
// is read with ReadToken.
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

// ReadToken is Read for a token or an API key, sent as one word in a
// header: one with white space or control characters inside is an error
// naming the file.
func ReadToken(file, field string) (string, error) {
	s, err := Read(file, field)
	if err != nil {
		return "", err
	}
	if err := check(s); err != nil {
		return "", fmt.Errorf("%s: %s %w", field, file, err)
	}
	return s, nil
}

// Env returns the token in environment variable name, surrounding white
// space trimmed ("" when unset); one with white space or control
// characters inside is an error naming the variable.
func Env(name string) (string, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if err := check(s); err != nil {
		return "", fmt.Errorf("%s %w", name, err)
	}
	return s, nil
}

// check refuses a secret with white space or control characters inside:
// a token sent in a header would never match the one read (an exporter
// would start with a token no client can present). The error never
// quotes the secret.
func check(s string) error {
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("holds white space at byte %d: a secret is one word (surrounding white space is trimmed)", i)
		case unicode.IsControl(r):
			return fmt.Errorf("holds a control character at byte %d", i)
		}
	}
	return nil
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
