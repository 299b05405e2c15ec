package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	good, blank := filepath.Join(dir, "good"), filepath.Join(dir, "blank")
	if err := os.WriteFile(good, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blank, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(good, "token_file"); err != nil || s != "s3cret" {
		t.Errorf("Read(good) = %q, %v; want the trimmed secret", s, err)
	}
	if _, err := Read(blank, "token_file"); err == nil || !strings.Contains(err.Error(), "token_file: "+blank+" is empty") {
		t.Errorf("Read(blank) = %v, want an empty-secret error naming field and file", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), "token_file"); err == nil || !strings.HasPrefix(err.Error(), "token_file: ") {
		t.Errorf("Read(missing) = %v, want an error naming the field", err)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://user:hunter2@gpu-node:9402":     "http://user:xxxxx@gpu-node:9402",
		"http://user@gpu-node:9402/path":        "http://user@gpu-node:9402/path",
		"https://gpu-node:9402":                 "https://gpu-node:9402",
		"http://user:hunter2@gpu node:9402/%zz": "xxxxx@gpu node:9402/%zz",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestExposed(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[os.FileMode]bool{0o600: false, 0o640: false, 0o644: true, 0o604: true} {
		p := filepath.Join(dir, mode.String())
		if err := os.WriteFile(p, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if got, _ := Exposed(p); got != want {
			t.Errorf("Exposed(mode %v) = %v, want %v", mode, got, want)
		}
	}
	if got, _ := Exposed(filepath.Join(dir, "missing")); got {
		t.Error("a missing file is exposed")
	}
}

func TestRedactURLQuery(t *testing.T) {
	for raw, want := range map[string]string{
		"http://rw:9090/api/v1/write?token=abc123&tenant=a":               "http://rw:9090/api/v1/write?token=xxxxx&tenant=a",
		"https://bucket/x?X-Amz-Signature=dead&X-Amz-Credential=AKIA&n=1": "https://bucket/x?X-Amz-Signature=xxxxx&X-Amz-Credential=xxxxx&n=1",
		"http://carol:pw@prom:9090/?api_key=k&Password=p&secret=s":        "http://carol:xxxxx@prom:9090/?api_key=xxxxx&Password=xxxxx&secret=xxxxx",
		"http://prom:9090/?q=up":                                          "http://prom:9090/?q=up",
		"carol:PROMsecret@prom:9090":                                      "carol:xxxxx@prom:9090",
		"http://u:p w@bad host/?token=t%zz":                               "xxxxx@bad host/?xxxxx",
		"":                                                                "",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestScrub(t *testing.T) {
	ss := SecretsOf("http://alice:PASSW0RD%2Fxyz@engine:8000/v1", "http://rw/write?token=TOKEN123&x=1", "carol:PROMsecret@prom:9090", "http://bob:ab@x")
	msg := `Post "http://rw/write?token=TOKEN123&x=1": EOF; target http://alice:PASSW0RD%2Fxyz@engine (PASSW0RD/xyz); carol:PROMsecret@prom; ab`
	got := ss.Scrub(msg)
	for _, secret := range []string{"PASSW0RD", "TOKEN123", "PROMsecret"} {
		if strings.Contains(got, secret) {
			t.Errorf("Scrub left %s in %q", secret, got)
		}
	}
	if !strings.HasSuffix(got, "; ab") {
		t.Errorf("Scrub replaced a secret shorter than %d bytes in ordinary text: %q", minScrubbed, got)
	}
	base := errors.New(msg)
	err := ss.Error(fmt.Errorf("wrapped: %w", base))
	if strings.Contains(err.Error(), "TOKEN123") || !errors.Is(err, base) {
		t.Errorf("Error = %q (Is base: %v): want scrubbed, the chain kept", err, errors.Is(err, base))
	}
	if ss.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestScrubLogger(t *testing.T) {
	var buf bytes.Buffer
	ss := SecretsOf("http://alice:PASSW0RDxyz@engine:8000/v1")
	log := ss.Logger(slog.New(slog.NewTextHandler(&buf, nil))).With("base", "http://alice:PASSW0RDxyz@engine")
	log.WithGroup("g").Info("starting PASSW0RDxyz", "target", "http://alice:PASSW0RDxyz@engine:8000/v1",
		"err", errors.New("dial PASSW0RDxyz"), "n", 3, slog.Group("inner", "u", "PASSW0RDxyz"))
	if out := buf.String(); strings.Contains(out, "PASSW0RDxyz") || !strings.Contains(out, "alice:xxxxx@engine") || !strings.Contains(out, "g.n=3") {
		t.Errorf("log line %q: want the password scrubbed everywhere, the rest kept", out)
	}
}

// TestInnerWhiteSpaceRefused: a token with white space or a control
// character inside is refused at load (issue 33 medium 11: the exporter
// started with it and every client got 401), the error naming the file or
// the variable, never the secret.
func TestInnerWhiteSpaceRefused(t *testing.T) {
	dir := t.TempDir()
	for name, secret := range map[string]string{
		"space": "abcdefgh ijklmnop", "tab": "abcdefgh\tijklmnop", "newline": "abcdefgh\nijklmnop",
		"nul": "abcdefgh\x00ijklmnop", "del": "abcdefgh\x7fijklmnop", "nbsp": "abcdefgh\u00a0ijklmnop",
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadToken(file, "token_file")
		if err == nil || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), "ijklmnop") {
			t.Errorf("ReadToken(%s) = %v; want an error naming the file, not the secret", name, err)
		}
		if name == "nul" {
			continue // an environment cannot hold NUL
		}
		t.Setenv("JOULEMARK_TEST_TOKEN", " "+secret+" ")
		_, err = Env("JOULEMARK_TEST_TOKEN")
		if err == nil || !strings.Contains(err.Error(), "JOULEMARK_TEST_TOKEN") || strings.Contains(err.Error(), "ijklmnop") {
			t.Errorf("Env(%s) = %v; want an error naming the variable, not the secret", name, err)
		}
	}
	t.Setenv("JOULEMARK_TEST_TOKEN", "  one-word-token\n")
	if s, err := Env("JOULEMARK_TEST_TOKEN"); err != nil || s != "one-word-token" {
		t.Errorf("Env(one word) = %q, %v; want the trimmed token", s, err)
	}
}

// TestScrubLongestFirst: a secret holding another (a query value holding
// the password) is replaced whole.
func TestScrubLongestFirst(t *testing.T) {
	ss := SecretsOf("http://u:PASSW0RDxyz@h/?token=QPASSW0RDxyz")
	if got := ss.Scrub("token=QPASSW0RDxyz pass PASSW0RDxyz"); got != "token=xxxxx pass xxxxx" {
		t.Errorf("Scrub = %q", got)
	}
}
