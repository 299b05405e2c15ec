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

// MIGReader is implemented by backends that list a GPU's MIG instances.
type MIGReader interface {
	// MIGUUIDs lists the UUIDs of GPU i's MIG instances (none when MIG is
	// off).
	MIGUUIDs(i int) ([]string, error)
}
