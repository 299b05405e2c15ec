package report

// GPUMemory is report.json "gpu_memory": GPU memory in use over the formal
// phase, from the exporter's 1 Hz joulemark_gpu_memory_used_bytes. Totals
// sum the GPUs (peak_bytes sums each GPU's own peak, an upper bound of the
// simultaneous peak). Null when no sample lies in the formal phase.
type GPUMemory struct {
	PeakBytes *float64 `json:"peak_bytes"`
	MeanBytes *float64 `json:"mean_bytes"`
	// MaxGPUPeakBytes is the largest single-GPU peak: what has to fit in
	// one GPU's memory (recommend --max-gpu-memory).
	MaxGPUPeakBytes *float64      `json:"max_gpu_peak_bytes"`
	GPUs            []GPUMemoryOf `json:"gpus"`
}

// GPUMemoryOf is one GPU's memory over the formal phase.
type GPUMemoryOf struct {
	GPU       string   `json:"gpu"`
	UUID      string   `json:"uuid"`
	Instance  string   `json:"-"` // for labels; a GPU is its instance and UUID
	PeakBytes *float64 `json:"peak_bytes"`
	MeanBytes *float64 `json:"mean_bytes"`
}

// GPUEnergy is one GPU's energy per stage, from its energy counter
// interpolated at the stage boundaries (report.json "energy_per_gpu").
type GPUEnergy struct {
	GPU             string              `json:"gpu"`
	UUID            string              `json:"uuid"`
	Stages          map[string]*float64 `json:"stages"`
	FormalJoules    *float64            `json:"formal_joules"`
	LifecycleJoules *float64            `json:"lifecycle_joules"` // startup + warm-up + formal + release
	// ShareOfFormal is the GPU's share of the formal energy of all GPUs.
	ShareOfFormal *float64 `json:"share_of_formal"`
}
