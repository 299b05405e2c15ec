//go:build !linux

package hugeheap

// addrRange is a range of addresses, [lo, hi).
type addrRange struct{ lo, hi uintptr }

// advise has nothing to ask for outside Linux.
func advise(size int) ([]addrRange, error) { return nil, ErrUnsupported }
