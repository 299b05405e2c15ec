package contract

import "fmt"

// Phase is one stage of a measured lifecycle.
type Phase string

// The lifecycle phases, in the only order a run may take them.
const (
	Idle    Phase = "idle"
	Startup Phase = "startup"
	Warmup  Phase = "warmup"
	Formal  Phase = "formal"
	Release Phase = "release"
)

// Phases lists every phase in lifecycle order.
var Phases = []Phase{Idle, Startup, Warmup, Formal, Release}

// ParsePhase returns the phase named s, or an error naming the valid phases.
func ParsePhase(s string) (Phase, error) {
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown phase %q (want one of idle, startup, warmup, formal, release)", s)
}

// Index is the phase's position in lifecycle order, or -1 for an unknown phase.
func (p Phase) Index() int {
	for i, q := range Phases {
		if q == p {
			return i
		}
	}
	return -1
}
