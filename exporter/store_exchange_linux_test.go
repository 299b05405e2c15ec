//go:build linux

package exporter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExchangeFileSwapsTwoInodes writes a file ten times through
// exchangeFile: each write reads back whole (longer and shorter ones), the
// spare holds the write before, and after the first write no file is
// created: the name alternates between two inodes.
func TestExchangeFileSwapsTwoInodes(t *testing.T) {
	dir := t.TempDir()
	x := newExchangeFile(dir, "state.json")
	defer x.Close()
	p := filepath.Join(dir, "state.json")
	inodes := map[uint64]bool{}
	prev := ""
	for i := range 10 {
		data := fmt.Sprintf("{\"n\":%d,\"pad\":%q}\n", i, strings.Repeat("x", (i*37)%50))
		if err := x.write([]byte(data)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got := readString(t, p); got != data {
			t.Fatalf("write %d: read back %q, want %q", i, got, data)
		}
		if i > 0 {
			if got := readString(t, filepath.Join(dir, ".state.json.spare")); got != prev {
				t.Fatalf("write %d: spare holds %q, want the write before, %q", i, got, prev)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
			if fi.Mode().Perm() != 0o644 {
				t.Fatalf("write %d: mode %v, want 0644", i, fi.Mode().Perm())
			}
		}
		prev = data
	}
	if len(inodes) != 2 {
		t.Errorf("the file took %d inodes over 9 writes after the first; want 2 (no file made per write)", len(inodes))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the file and its spare: %v", len(entries), entries)
	}
}

// TestExchangeFileStartsOver removes the spare behind exchangeFile's
// back: the write still lands (writeDurable), and the next ones swap
// again.
func TestExchangeFileStartsOver(t *testing.T) {
	dir := t.TempDir()
	x := newExchangeFile(dir, "state.json")
	defer x.Close()
	p := filepath.Join(dir, "state.json")
	for i, data := range []string{"one\n", "two\n", "three\n", "four\n", "five\n"} {
		if i == 2 {
			if err := os.Remove(filepath.Join(dir, ".state.json.spare")); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.write([]byte(data)); err != nil {
			t.Fatalf("write %q: %v", data, err)
		}
		if got := readString(t, p); got != data {
			t.Fatalf("read back %q, want %q", got, data)
		}
	}
	if x.unsupported || x.cur == nil {
		t.Errorf("after a failed swap the writes went on through writeDurable (unsupported %v, open %v); want them swapping again", x.unsupported, x.cur != nil)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExchangeFileRefusesReplacedName puts a directory in the file's
// place: the write fails (it is never swapped away), and succeeds again
// once the name is free.
func TestExchangeFileRefusesReplacedName(t *testing.T) {
	dir := t.TempDir()
	x := newExchangeFile(dir, "state.json")
	defer x.Close()
	p := filepath.Join(dir, "state.json")
	for _, data := range []string{"one\n", "two\n"} {
		if err := x.write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := x.write([]byte("three\n")); err == nil {
		t.Fatal("write with a directory in the file's place succeeded; want it refused")
	}
	if fi, err := os.Stat(filepath.Join(p, "blocker")); err != nil || !fi.IsDir() {
		t.Fatalf("the directory in the file's place moved: %v", err)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"four\n", "five\n"} {
		if err := x.write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, p); got != data {
			t.Fatalf("read back %q, want %q", got, data)
		}
	}
}
