package exporter

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The command's defaults pass Options.Validate; the configuration file
// sets only its settings, strictly, and a key it lacks keeps the value.
func TestOptionsFile(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("DefaultOptions: %v", err)
	}
	dir := t.TempDir()
	load := func(yaml string) error {
		f := filepath.Join(dir, "exporter.yml")
		if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		return o.LoadFile(f)
	}
	o := DefaultOptions()
	f := filepath.Join(dir, "run.yml")
	if err := os.WriteFile(f, []byte("run:\n  metrics_ttl: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.LoadFile(f); err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.Config.RunMetricsTTL = time.Minute
	if !reflect.DeepEqual(o, want) {
		t.Errorf("run.metrics_ttl: 1m gives\n%+v\nwant\n%+v", o, want)
	}
	if err := load("sample:\n  interval: 1s\n"); err == nil || !strings.Contains(err.Error(), "field sample not found") {
		t.Errorf("a flag's setting in the file: %v, want refused", err)
	}
	if err := load("idle:\n  cv_threshold: high\n"); err == nil {
		t.Error("a string for a number: accepted")
	}
	o.Config.IdleCVThreshold = 0
	var fe *FieldError
	if err := o.Validate(); !errors.As(err, &fe) || FileSettings["idle.cv_threshold"] != fe.Field {
		t.Errorf("idle.cv_threshold 0: %v, want a *FieldError on %s", err, FileSettings["idle.cv_threshold"])
	}
}
