package rxstamp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

func timespecBytes(ts unix.Timespec) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
}
