package contract

// Workload kinds (workload.kind); WorkloadCorrectness also names the
// quality rule and the report's quality.workload of that workload.
const (
	WorkloadSynthetic   = "synthetic"
	WorkloadCorrectness = "correctness"
)
