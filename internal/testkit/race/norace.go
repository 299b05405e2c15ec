//go:build !race

// Package race says whether the race detector is on: allocation budgets
// do not hold under it (sync.Pool drops objects at random there).
package race

// Enabled is whether the binary was built with -race.
const Enabled = false
