package powercap

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMeterSample reads a two-socket tree on disk (five zones) the way
// the exporter does at every --interval:
// go test ./powercap -run '^$' -bench MeterSample
func BenchmarkMeterSample(b *testing.B) {
	dir := b.TempDir()
	for name, f := range fakeTree() {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	m := NewMeter(os.DirFS(dir))
	if ok, _, err := m.Status(); !ok {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Sample()
	}
}
