package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/gpu"
)

// TestDoctorCommandSim runs `joulemark doctor --gpu=sim` in both formats.
func TestDoctorCommandSim(t *testing.T) {
	var out bytes.Buffer
	cli := parseCLI(t, "doctor", "--gpu=sim", "--gpus=2", "--duration=300ms", "--format=json")
	cli.Doctor.out = &out
	if err := cli.Doctor.Run(&cli.Globals); err != nil {
		t.Fatal(err)
	}
	var r gpu.DoctorReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("doctor --format=json: %v\n%s", err, out.String())
	}
	if r.Backend != "sim" || len(r.GPUs) != 2 || r.GPUs[1].Counter == nil || r.GPUs[1].Latency.Calls == 0 {
		t.Errorf("report %+v", r)
	}
	out.Reset()
	cli = parseCLI(t, "doctor", "--gpu=sim", "--duration=100ms", "--no-sim.energy-counter")
	cli.Doctor.out = &out
	if err := cli.Doctor.Run(&cli.Globals); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "[warn]  energy_counter") && !strings.Contains(s, "energy_counter: no usable energy counter") {
		t.Errorf("text report:\n%s", s)
	}
}
