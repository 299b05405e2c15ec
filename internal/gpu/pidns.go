package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// initPIDNamespace is the host's initial PID namespace as /proc/*/ns/pid
// names it (the kernel's PROC_PID_INIT_INO, 0xEFFFFFFC).
const initPIDNamespace = "pid:[4026531836]"

// PIDNamespace is whether this process sees the host's processes. NVIDIA's
// driver translates each GPU process's PID into the caller's PID namespace
// and leaves out those with none there, so outside the host's namespace
// (a container without hostPID) NVML lists no process of another
// container: the list is blind, not empty.
type PIDNamespace struct {
	// Host is true when this process is in the host's PID namespace.
	Host bool `json:"host"`
	// Self and HostNS are the namespaces compared ("pid:[inode]"); HostNS
	// is the initial namespace's inode when the host's /proc/1 could not
	// be read.
	Self   string `json:"self"`
	HostNS string `json:"host_ns"`
	// Basis says what Self was compared with.
	Basis string `json:"basis"`
}

// DetectPIDNamespace compares this process's PID namespace with that of
// the host's init, read through hostProc (the host's /proc mounted in the
// container, e.g. /host/proc; "/proc" outside a container). When hostProc's
// /proc/1 cannot be read (no permission, no mount) it compares with the
// kernel's initial PID namespace, which is the host's unless the node
// itself runs in a container. An error when this process's own namespace
// cannot be read (no /proc).
func DetectPIDNamespace(hostProc string) (PIDNamespace, error) {
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return PIDNamespace{}, fmt.Errorf("reading this process's PID namespace: %w", err)
	}
	ns := PIDNamespace{Self: self}
	if hostProc != "" && hostProc != "/proc" {
		host, err := os.Readlink(filepath.Join(hostProc, "1", "ns", "pid"))
		if err == nil {
			ns.HostNS, ns.Host = host, host == self
			ns.Basis = fmt.Sprintf("the host's init through %s/1/ns/pid", hostProc)
			return ns, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return PIDNamespace{}, fmt.Errorf("reading the host's PID namespace: %w", err)
		}
	}
	ns.HostNS, ns.Host = initPIDNamespace, self == initPIDNamespace
	ns.Basis = "the kernel's initial PID namespace"
	return ns, nil
}

// Why says, for a process not in the host's PID namespace, why NVML's
// process lists cannot be trusted.
func (n PIDNamespace) Why() string {
	if n.Host {
		return ""
	}
	return fmt.Sprintf("the exporter is not in the host's PID namespace (%s, host %s, by %s): NVML lists only the GPU processes visible in its own, so an engine in another container is never seen; run it with hostPID (Helm: exporter.hostPID=true)", n.Self, n.HostNS, n.Basis)
}
