package runset

import "github.com/joulemark/joulemark/internal/atomicfile"

// WriteFileNew writes data to path atomically (a temporary file in the same
// directory, then a hard link into place) and never replaces an existing
// file: an earlier result is never overwritten.
func WriteFileNew(path string, data []byte) error { return atomicfile.WriteFileNew(path, data) }
