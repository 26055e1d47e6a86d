package stat

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 3}, // the upper of the two middle values
		{[]float64{5, 5, 1, 9, 7}, 5},
		{[]float64{-1, -3, -2}, -2},
	} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Fatalf("Median changed its input: %v, was %v", c.xs, in)
		}
	}
}

// TestProcessCPU: busy work shows as CPU time (10 ms of it within 10 s of
// wall time, however loaded the machine), and the clock never goes back.
// Where the platform reports no CPU time it stays 0.
func TestProcessCPU(t *testing.T) {
	unix := runtime.GOOS == "linux" || runtime.GOOS == "darwin"
	c0, c := ProcessCPU(), ProcessCPU()
	x := 1.0
	for t0 := time.Now(); c-c0 < 10*time.Millisecond && time.Since(t0) < 10*time.Second; {
		for range 10000 {
			x = x*1.0000001 + 1e-9
		}
		c1 := ProcessCPU()
		if c1 < c {
			t.Fatalf("ProcessCPU went back: %v, then %v", c, c1)
		}
		c = c1
		if !unix && c == 0 {
			return
		}
	}
	if c-c0 < 10*time.Millisecond {
		t.Errorf("ProcessCPU advanced %v in 10 s of busy work (x=%v)", c-c0, x)
	}
}
