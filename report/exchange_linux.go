package report

import "golang.org/x/sys/unix"

// exchangeDirs swaps a and b in one atomic rename (renameat2
// RENAME_EXCHANGE); both must exist.
func exchangeDirs(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
