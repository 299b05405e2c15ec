// Package ctxtime waits as long as a context allows.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done, whichever comes first, and returns
// ctx's error in the second case. A d of zero or less only checks ctx.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
