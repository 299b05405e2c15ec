package gpu

// NVMLOptions tune the NVML backend.
type NVMLOptions struct {
	// MaxGPUs limits the GPUs read to the first N (0: all).
	MaxGPUs int
	// Clock stamps the samples (default the system clock).
	Clock Clock
}
