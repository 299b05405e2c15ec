//go:build !linux

package benchjob

import "syscall"

// setPdeathsig does nothing where the kernel has no parent-death signal:
// the engine pid file is then the only way an orphan is reaped.
func setPdeathsig(*syscall.SysProcAttr, syscall.Signal) {}
