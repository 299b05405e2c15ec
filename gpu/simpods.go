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
