//go:build !linux

package analyze

import "errors"

// exchangeDirs is unsupported here: WriteReportKeeping renames twice.
func exchangeDirs(a, b string) error { return errors.ErrUnsupported }
