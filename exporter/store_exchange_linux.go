//go:build linux

package exporter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// exchangeFile replaces one state file durably at a fraction of
// writeDurable's cost, for the file saved every second (active_runs.json):
// no file is created, renamed over and freed per write. It keeps two
// inodes open, the file's and a spare beside it (.NAME.spare); a write
// fills the spare, syncs it, swaps the two names atomically
// (renameat2 RENAME_EXCHANGE) and syncs the directory, so the file's name
// always holds a complete, synced document, and the spare the one before.
// Where the swap is not supported (a file system without it), or after any
// failure, the write goes through writeDurable and the next one starts
// over. A crash leaves the name on the last synced document (the swap is
// synced before write returns): at most the write in progress is lost,
// and a torn write only ever tears the spare.
type exchangeFile struct {
	mu          sync.Mutex
	dir, name   string
	dirFD       *os.File // the directory, kept open for its fsync
	cur, spare  *os.File // the inodes named name and .name.spare
	unsupported bool     // the swap failed with EINVAL or ENOSYS: writeDurable from now on
}

// newExchangeFile writes file name in directory dir.
func newExchangeFile(dir, name string) *exchangeFile {
	return &exchangeFile{dir: dir, name: name}
}

// spareName is the spare's name in the directory.
func (x *exchangeFile) spareName() string { return "." + x.name + ".spare" }

// write replaces the file with data durably.
func (x *exchangeFile) write(data []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.unsupported {
		return writeDurable(filepath.Join(x.dir, x.name), data)
	}
	if x.cur == nil {
		// The first write, or the first after a failure: the file made
		// anew, then both inodes opened.
		if err := writeDurable(filepath.Join(x.dir, x.name), data); err != nil {
			return err
		}
		if err := x.open(); err != nil {
			x.close()
			return fmt.Errorf("opening %s for the next writes: %w", filepath.Join(x.dir, x.name), err)
		}
		return nil
	}
	if err := x.swapIn(data); err != nil {
		x.close()
		x.unsupported = errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)
		if derr := writeDurable(filepath.Join(x.dir, x.name), data); derr != nil {
			return errors.Join(fmt.Errorf("writing %s through its spare: %w", filepath.Join(x.dir, x.name), err), derr)
		}
	}
	return nil
}

// swapIn writes data into the spare, syncs it, swaps it in and syncs the
// directory.
func (x *exchangeFile) swapIn(data []byte) error {
	if _, err := x.spare.WriteAt(data, 0); err != nil {
		return err
	}
	if err := x.spare.Truncate(int64(len(data))); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(x.spare.Fd())); err != nil {
		return fmt.Errorf("fdatasync: %w", err)
	}
	dfd := int(x.dirFD.Fd())
	if err := x.still(dfd); err != nil {
		return err
	}
	if err := unix.Renameat2(dfd, x.spareName(), dfd, x.name, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("renameat2 %s %s: %w", x.spareName(), x.name, err)
	}
	x.cur, x.spare = x.spare, x.cur
	if err := x.dirFD.Sync(); err != nil {
		return fmt.Errorf("syncing the directory: %w", err)
	}
	return nil
}

// errRenamed is a name no longer on the inode opened for it.
var errRenamed = errors.New("replaced behind the exporter's back")

// still checks that both names are still on the inodes opened for them:
// never swap in a file another process put there (a directory in place
// of the state file must fail the write, not be swapped away).
func (x *exchangeFile) still(dfd int) error {
	for _, f := range []struct {
		name string
		fd   *os.File
	}{{x.name, x.cur}, {x.spareName(), x.spare}} {
		var named, opened unix.Stat_t
		if err := unix.Fstatat(dfd, f.name, &named, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := unix.Fstat(int(f.fd.Fd()), &opened); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if named.Ino != opened.Ino || named.Dev != opened.Dev {
			return fmt.Errorf("%s: %w", f.name, errRenamed)
		}
	}
	return nil
}

// open opens the directory, the file and the spare (made 0644 when
// missing).
func (x *exchangeFile) open() error {
	var err error
	if x.dirFD, err = os.Open(x.dir); err != nil {
		return err
	}
	if x.cur, err = os.OpenFile(filepath.Join(x.dir, x.name), os.O_RDWR, 0); err != nil {
		return err
	}
	if x.spare, err = os.OpenFile(filepath.Join(x.dir, x.spareName()), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	return x.spare.Chmod(0o644)
}

// close closes what open opened; the next write starts over.
func (x *exchangeFile) close() {
	for _, f := range []*os.File{x.dirFD, x.cur, x.spare} {
		if f != nil {
			_ = f.Close()
		}
	}
	x.dirFD, x.cur, x.spare = nil, nil, nil
}

// Close closes the files.
func (x *exchangeFile) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.close()
}
