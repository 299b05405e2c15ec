//go:build !linux

package report

import "errors"

// exchangeDirs is unsupported here: WriteKeeping renames twice.
func exchangeDirs(a, b string) error { return errors.ErrUnsupported }
