//go:build !linux

package rxstamp

import "net"

// reader is empty where the kernel gives no receive timestamps.
type reader struct{}

// Wrap returns nc: this platform has no receive timestamps here.
func Wrap(nc net.Conn) net.Conn { return nc }
