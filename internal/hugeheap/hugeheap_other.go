//go:build !linux

package hugeheap

// advise has nothing to ask for outside Linux.
func advise(size int) (lo, hi uintptr, err error) { return 0, 0, ErrUnsupported }
