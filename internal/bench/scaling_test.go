package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestScaling runs the sweep on a synthetic cost model: "full" is quadratic
// in memory and time, "aft" linear.
func TestScaling(t *testing.T) {
	measure := func(_ context.Context, m string, T int) (ScalingPoint, error) {
		p := ScalingPoint{Batch: 1}
		if m == "full" {
			p.FwdMs, p.BwdMs = float64(T*T)/1e5, 2*float64(T*T)/1e5
			p.PeakRSSBytes = int64(T) * int64(T) * 4
		} else {
			p.FwdMs, p.BwdMs = float64(T)/1e3, float64(T)/1e3
			p.PeakRSSBytes = int64(T) * 1024
		}
		return p, nil
	}
	// full: 4·T² bytes exceeds 64 MiB first at T = 8192 (256 MiB) — after
	// 4096 (64 MiB, not over).
	pts, err := Scaling(context.Background(), ScalingOptions{Mixers: []string{"full", "aft"}, MinLen: 256, MaxLen: 1 << 20,
		MemBudget: 64 << 20, Measure: measure})
	if err != nil {
		t.Fatal(err)
	}
	last := pts[len(pts)-1]
	if last.Len != 8192 || len(pts) != 12 {
		t.Errorf("%d points, last at T=%d; want 12 up to 8192", len(pts), last.Len)
	}
	// A time limit drops the slow mixer only.
	pts, _ = Scaling(context.Background(), ScalingOptions{Mixers: []string{"full", "aft"}, MinLen: 256, MaxLen: 4096,
		TimeLimitMs: 10, Measure: measure})
	n := map[string]int{}
	for _, p := range pts {
		n[p.Mixer]++
	}
	if n["aft"] != 5 || n["full"] != 3 {
		t.Errorf("counts %v, want full 3 (256, 512, 1024 over the limit) and aft 5", n)
	}
	dir := t.TempDir()
	if err := WriteScaling(dir, pts, "test"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"scaling.json", "scaling.csv", PlotScalingTime, PlotScalingMemory} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
