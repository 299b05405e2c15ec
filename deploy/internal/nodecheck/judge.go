package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// The node check's bounds on what it measures (docs/exporter.md, "Checking
// a node"): under the stand-in engine GPU 0's formal-phase mean power is at
// least MinPowerRise times its idle mean power, and the exporter's phase
// energy on GPU 0 is within MaxCounterDiff of the raw NVML energy counter
// over the same boundaries.
const (
	MinPowerRise   = 1.5
	MaxCounterDiff = 0.01
)

// phaseMeanPower is GPU 0's mean power over the run's phase p (its energy
// over the time to the next phase's start, or to its own end), and whether
// the run has that phase with an energy and a positive length.
func phaseMeanPower(st *phaseapi.RunStatus, p contract.Phase) (float64, bool) {
	for k, ph := range st.Phases {
		if ph.Phase != p || len(ph.GPUs) == 0 {
			continue
		}
		end := math.NaN()
		if k+1 < len(st.Phases) {
			end = st.Phases[k+1].Start
		} else if ph.End != nil {
			end = *ph.End
		}
		if d := end - ph.Start; d > 0 {
			return ph.GPUs[0].EnergyJoules / d, true
		}
	}
	return 0, false
}

// powerRoseCheck judges that the formal phase's mean power rose at least
// MinPowerRise times over idle under the stand-in load.
func powerRoseCheck(st *phaseapi.RunStatus) Check {
	idle, okI := phaseMeanPower(st, contract.Idle)
	formal, okF := phaseMeanPower(st, contract.Formal)
	c := Check{Name: "formal_power_rose"}
	switch {
	case !okI || !okF:
		c.Info = fmt.Sprintf("GPU 0 formal/idle mean power: no idle or formal phase with energy in the run (idle %v, formal %v); bound >= %.2f x", okI, okF, MinPowerRise)
	case idle <= 0:
		c.Info = fmt.Sprintf("GPU 0 idle mean power %.1f W is not positive; bound formal >= %.2f x idle", idle, MinPowerRise)
	default:
		ratio := formal / idle
		c.OK = ratio >= MinPowerRise
		c.Info = fmt.Sprintf("GPU 0 formal/idle mean power %.3f x (formal %.1f W, idle %.1f W); bound >= %.2f x", ratio, formal, idle, MinPowerRise)
	}
	return c
}

// counterCheck judges that every compared phase's exporter energy is
// within MaxCounterDiff of the raw counter; no compared phase fails.
func counterCheck(cs []CounterCompare) Check {
	c := Check{Name: "phase_energy_vs_counter", OK: len(cs) > 0}
	if len(cs) == 0 {
		c.Info = fmt.Sprintf("exporter vs counter phase energy: no phase compared (counter reads missing); bound |difference| <= %.1f%%", 100*MaxCounterDiff)
		return c
	}
	var parts []string
	for _, x := range cs {
		ok := x.Counter > 0 && math.Abs(x.DiffRatio) <= MaxCounterDiff
		c.OK = c.OK && ok
		parts = append(parts, fmt.Sprintf("%s %+.3f%% (exporter %.1f J, counter %.1f J)%s", x.Phase, 100*x.DiffRatio, x.Exporter, x.Counter, map[bool]string{true: "", false: " OUT OF BOUND"}[ok]))
	}
	c.Info = fmt.Sprintf("exporter vs counter phase energy on GPU 0: %s; bound |difference| <= %.1f%%", strings.Join(parts, ", "), 100*MaxCounterDiff)
	return c
}

// judge is the node check's judgement of its measurements on a real GPU:
// the power rose under load and the exporter agrees with the counter. On
// sim there is no load and no counter, so nothing is judged.
func judge(r *Report) []Check {
	if r.Facts.Backend == "sim" {
		return nil
	}
	return []Check{powerRoseCheck(r.Run), counterCheck(r.Counter)}
}

// failures is one line per failed check, naming it and its figures.
func failures(cs []Check) error {
	var lines []string
	for _, c := range cs {
		if !c.OK {
			lines = append(lines, fmt.Sprintf("check %s failed: %s", c.Name, c.Info))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(lines, "\nnodecheck: "))
}
