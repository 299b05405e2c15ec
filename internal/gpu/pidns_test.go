package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetectPIDNamespace: the exporter's PID namespace is compared with the
// host init's, read through a mounted host /proc; without one, with the
// kernel's initial namespace.
func TestDetectPIDNamespace(t *testing.T) {
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	hostProc := func(link string) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "1", "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(link, filepath.Join(dir, "1", "ns", "pid")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	ns, err := DetectPIDNamespace(hostProc(self))
	if err != nil || !ns.Host || ns.Why() != "" {
		t.Errorf("same namespace as the host's init: %+v %v", ns, err)
	}
	ns, err = DetectPIDNamespace(hostProc("pid:[1]"))
	if err != nil || ns.Host || !strings.Contains(ns.Why(), "hostPID") {
		t.Errorf("another namespace than the host's init: %+v %v (%s)", ns, err, ns.Why())
	}
	ns, err = DetectPIDNamespace(t.TempDir()) // no host /proc/1 there
	if err != nil || ns.HostNS != initPIDNamespace || ns.Host != (self == initPIDNamespace) {
		t.Errorf("without the host's /proc: %+v %v", ns, err)
	}
}
