//go:build !cgo

package gpu

import "errors"

// OpenNVML fails in a build without cgo: go-nvml loads libnvidia-ml through
// cgo.
func OpenNVML(NVMLOptions) (Backend, error) {
	return nil, errors.New("nvml: this joulemark was built without cgo (CGO_ENABLED=0, or no C compiler), so it cannot load the NVML library; rebuild with a C compiler, or use --gpu=sim for simulated GPUs")
}
