package benchjob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// repeat: N expands every configuration (every sweep point) into N runs
// named <id>-rep<i>, one repetition group per point; their config no
// longer repeats, and a taken id is never reused.
func TestRunPointsRepeat(t *testing.T) {
	c := validConfig()
	c.RunID, c.Repeat = "exp", 2
	var ids, groups []string
	for _, p := range runPoints(c) {
		ids, groups = append(ids, p.RunID), append(groups, p.repetition.group)
		if p.Repeat != 0 || p.repetition.of != 2 {
			t.Errorf("%s: repeat %d, group size %d", p.RunID, p.Repeat, p.repetition.of)
		}
	}
	if !slices.Equal(ids, []string{"exp-rep1", "exp-rep2"}) || !slices.Equal(groups, []string{"exp", "exp"}) {
		t.Errorf("ids %v groups %v", ids, groups)
	}
	c.Concurrency, c.SweepConcurrency = 0, []int{1, 4}
	ids, groups = nil, nil
	for _, p := range runPoints(c) {
		ids, groups = append(ids, p.RunID), append(groups, p.repetition.group)
	}
	if !slices.Equal(ids, []string{"exp-c1-rep1", "exp-c1-rep2", "exp-c4-rep1", "exp-c4-rep2"}) ||
		!slices.Equal(groups, []string{"exp-c1", "exp-c1", "exp-c4", "exp-c4"}) {
		t.Errorf("sweep × repeat: ids %v groups %v", ids, groups)
	}
	if n := len(runPoints(validConfig())); n != 0 {
		t.Errorf("a single run expands to %d points", n)
	}

	c = validConfig()
	c.RunsDir, c.RunID, c.Repeat = t.TempDir(), "exp", 2
	if err := os.Mkdir(filepath.Join(c.RunsDir, "exp-rep2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if id := FreshRunID(c); id != "exp-2" {
		t.Errorf("fresh id %q with exp-rep2 taken, want exp-2", id)
	}
	// Sweep refuses before any lifecycle starts (rep1 is free, rep2 taken).
	_, err := Sweep(context.Background(), c, Options{})
	if !errors.Is(err, runarchive.ErrExists) || !strings.Contains(err.Error(), "exp-rep2") {
		t.Errorf("sweep over a taken repetition id: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.RunsDir, "exp-rep1")); err == nil {
		t.Error("exp-rep1 was created although exp-rep2 is taken")
	}
	c.Repeat = MaxRepeat + 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "repeat:") {
		t.Errorf("repeat %d: %v", c.Repeat, err)
	}
	c.Repeat = 2
	if _, err := Run(context.Background(), c, Options{}); err == nil || !strings.Contains(err.Error(), "Sweep") {
		t.Errorf("Run with repeat 2: %v", err)
	}
}
