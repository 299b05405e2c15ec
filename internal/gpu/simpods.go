package gpu

import "fmt"

// SetGPUAttached says whether simulated GPU i is one of the engine's
// (the default): a detached GPU idles whatever the engine's state and load,
// as a GPU another pod holds, or none.
func (s *Sim) SetGPUAttached(i int, attached bool) error {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.gpus) {
		return fmt.Errorf("sim: no GPU %d", i)
	}
	s.gpus[i].detached = !attached
	s.retarget(now)
	return nil
}

// SetGPUEngineState gives GPU i an engine of its own in state st (a pod's
// engine on the GPUs it holds): from then on the Sim-wide SetEngineState no
// longer moves it.
func (s *Sim) SetGPUEngineState(i int, st EngineState) error {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.gpus) {
		return fmt.Errorf("sim: no GPU %d", i)
	}
	s.gpus[i].state, s.gpus[i].own = st, true
	s.retarget(now)
	return nil
}
