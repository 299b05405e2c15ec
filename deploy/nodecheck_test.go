package deploy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// TestGPUNodeCheckSim runs deploy/gpu-node-check.sh with GPU=sim, as it
// runs on a GPU node, twice on the same OUT: each run starts from a fresh
// state directory with unique run ids (a rerun met 409 on every phase),
// writes node-check.json and node-check.md, passes its checks and stays
// under four minutes.
func TestGPUNodeCheckSim(t *testing.T) {
	testenv.SkipIfShort(t, "builds two binaries and runs the node check twice (~40 s each)")
	testenv.LookPath(t, "bash")
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	for _, b := range []struct{ out, pkg string }{{"joulemark", "./cmd/joulemark"}, {"nodecheck", "./deploy/internal/nodecheck"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	out := t.TempDir()
	_, port, _ := strings.Cut(testnet.FreeAddr(t), ":")
	for run := range 2 {
		began := time.Now()
		cmd := exec.CommandContext(ctx, "bash", "gpu-node-check.sh")
		cmd.Env = append(os.Environ(), "GPU=sim", "BUSY=4s", "HOLD=1s", "PORT="+port, "OUT="+out,
			"JOULEMARK="+filepath.Join(bin, "joulemark"), "NODECHECK="+filepath.Join(bin, "nodecheck"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, b)
		}
		if d := time.Since(began); d > 4*time.Minute {
			t.Errorf("run %d took %v, over four minutes", run, d)
		}
		var rep struct {
			Checks []struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			} `json:"checks"`
			Run struct {
				RunID string `json:"run_id"`
			} `json:"run"`
			Poll []struct {
				Latencies []any `json:"latencies"`
			} `json:"poll"`
		}
		b, err := os.ReadFile(filepath.Join(out, "node-check.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Checks) < 3 || !strings.HasPrefix(rep.Run.RunID, "nc-load-") || len(rep.Poll) == 0 || len(rep.Poll[0].Latencies) == 0 {
			t.Errorf("run %d: report %s", run, b)
		}
		for _, c := range rep.Checks {
			if !c.OK {
				t.Errorf("run %d: check %s failed", run, c.Name)
			}
		}
		if md, err := os.ReadFile(filepath.Join(out, "node-check.md")); err != nil || !strings.Contains(string(md), "## Checks") {
			t.Errorf("run %d: node-check.md: %v", run, err)
		}
	}
}
