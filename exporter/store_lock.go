package exporter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile, in the state directory, is held (flock, exclusive) by the
// exporter using the directory, from before it reads a state file until it
// exits; it holds that exporter's pid. A second exporter on the same
// directory refuses to start, naming it: two writers would forget each
// other's run ids and overwrite each other's counters.
const lockFile = "lock"

// errStorageLocked is wrapped by the error of an exporter whose state
// directory another process holds.
var errStorageLocked = errors.New("state directory in use")

// lockDir takes the exclusive lock of state directory dir and writes this
// process's pid into it; the lock lasts until the returned file is closed
// (or the process exits, whatever kills it).
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("exporter: storage path %s: opening its lock file: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := lockHolder(f)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("exporter: storage path %s: %w: another exporter (%s) holds %s; give each exporter its own --storage.path, or stop the other one",
				dir, errStorageLocked, holder, p)
		}
		return nil, fmt.Errorf("exporter: storage path %s: locking %s: %w", dir, p, err)
	}
	if err := writePid(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("exporter: storage path %s: writing the pid into %s: %w", dir, p, err)
	}
	return f, nil
}

// lockHolder names the process whose pid the lock file holds.
func lockHolder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return "pid unknown"
	}
	return "pid " + strconv.Itoa(pid)
}

// writePid replaces the lock file's content with this process's pid (it
// is not synced: a pid is worthless after a power loss).
func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// unlock releases the state directory (Close, or a failed New); the pid
// stays in the file, harmless without the lock.
func (s *storage) unlock() {
	if s != nil && s.active != nil {
		s.active.Close()
	}
	if s != nil && s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// releaseStorage unlocks the state directory at Close once the save loop
// made its last save (waiting until shutdownTimeout after began at most:
// the process exits then anyway).
func (e *Exporter) releaseStorage(began time.Time) {
	if e.store == nil {
		return
	}
	if e.saveDone != nil {
		t := time.NewTimer(max(shutdownTimeout-time.Since(began), time.Millisecond))
		defer t.Stop()
		select {
		case <-e.saveDone:
		case <-t.C:
			e.log.Error("the last save of the state has not ended; releasing the state directory anyway")
		}
	}
	e.store.unlock()
}

// bootIDPath is the Linux kernel's random ID of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootID is cfg.BootID, else the kernel's ("" when unreadable: no
// restart bridge then).
func (cfg *Config) bootID() string {
	if cfg.BootID != "" {
		return cfg.BootID
	}
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		cfg.Logger.Warn("the node's boot ID is unreadable: a restart will not bridge the downtime with the GPUs' own energy counters", "path", bootIDPath, "err", err)
		return ""
	}
	return strings.TrimSpace(string(b))
}
