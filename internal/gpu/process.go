package gpu

// ProcessSM is one process's streaming-multiprocessor utilization on a GPU.
type ProcessSM struct {
	PID uint32
	// SMPercent is the process's SM utilization, 0-100, averaged over the
	// samples NVML kept for it in the last seconds.
	SMPercent float64
}

// ProcessReader is implemented by backends that report each process's SM
// utilization (NVML's nvmlDeviceGetProcessUtilization).
type ProcessReader interface {
	// ProcessSM lists the processes on GPU i that used it in the last
	// seconds, with their SM utilization.
	ProcessSM(i int) ([]ProcessSM, error)
}

// MIGInstance is one MIG instance of a GPU and its size.
type MIGInstance struct {
	UUID string
	// Index is the instance's MIG device index on its GPU (the device
	// plugin's index strategy names it "<gpu>:<index>"); GI and CI are its
	// GPU and compute instance IDs (old-style ids "MIG-GPU-<uuid>/<gi>/<ci>"),
	// -1 when unknown.
	Index, GI, CI int
	// SMs and MemoryBytes are the instance's multiprocessors and memory (0:
	// unknown).
	SMs         int
	MemoryBytes uint64
}

// Weight is the instance's share of its GPU by size: its SM count, else
// its memory, else 1.
func (m MIGInstance) Weight() float64 {
	switch {
	case m.SMs > 0:
		return float64(m.SMs)
	case m.MemoryBytes > 0:
		return float64(m.MemoryBytes)
	}
	return 1
}

// MIGReader is implemented by backends that list a GPU's MIG instances.
type MIGReader interface {
	// MIGInstances lists GPU i's MIG instances (none when MIG is off).
	MIGInstances(i int) ([]MIGInstance, error)
}
