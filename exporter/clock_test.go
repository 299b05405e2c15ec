package exporter

import "github.com/joulemark/joulemark/internal/testkit/fakeclock"

// fakeClock is the manually advanced clock shared by the simulator and the
// exporter in tests.
type fakeClock = fakeclock.Clock

func newFakeClock() *fakeClock { return fakeclock.New() }
