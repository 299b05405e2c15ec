package gpu

import (
	"log/slog"
	"time"
)

// NVMLOptions tune the NVML backend.
type NVMLOptions struct {
	// MaxGPUs limits the GPUs read to the first N (0: all).
	MaxGPUs int
	// Clock stamps the samples (default the system clock).
	Clock Clock
	// InitTimeout is how long nvmlInit is retried (with exponential
	// backoff), and how long opening is retried when no GPU opens; 0: one
	// attempt.
	InitTimeout time.Duration
	// RetryInterval is the first wait before a GPU that failed to open is
	// tried again; each failed attempt doubles it, up to 5 minutes or
	// RetryInterval if longer (default 10s).
	RetryInterval time.Duration
	// Logger receives retries (nil: none).
	Logger *slog.Logger
}
