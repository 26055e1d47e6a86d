package registry_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// allocs counts the allocations of one float32 Forward and one Backward of
// kind k (its first test case's options and masking) at batch b, length t,
// d_model 64 and 4 heads.
func allocs(t *testing.T, k mixer.Kind, b, T int) (fwd, bwd float64) {
	tc := k.Tests[0]
	tc.D, tc.Heads, tc.MaxLen, tc.B, tc.T = 64, 4, T, b, T
	m, err := k.New32(tc.Config(k.Name))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var w, g [][]float32
	for _, p := range m.Params() {
		n := 1
		for _, s := range p.Shape {
			n *= s
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.1)
		}
		w, g = append(w, v), append(g, make([]float32, n))
	}
	m.Bind(w, g)
	n := b * T * tc.D
	x, out, dout, dx := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], dout[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	act, scratch := make([]float32, m.ActSize(b, T)), make([]float32, m.ScratchSize(b, T, 0))
	p := mixer.Pass{B: b, T: T, Seed: 7}
	m.Forward(out, act, scratch, x, p)
	m.Backward(dx, scratch, dout, act, x, p)
	// The least of three counts: the thread pool allocates now and then on
	// its own (a new worker when none is idle under load, a call record
	// after a collection empties its sync.Pool), never fewer times.
	fwd, bwd = math.Inf(1), math.Inf(1)
	for range 3 {
		fwd = min(fwd, testing.AllocsPerRun(10, func() { m.Forward(out, act, scratch, x, p) }))
		bwd = min(bwd, testing.AllocsPerRun(10, func() { m.Backward(dx, scratch, dout, act, x, p) }))
	}
	return fwd, bwd
}

// maxAllocs bounds the allocations of one Forward or Backward: the
// closures handed to parallel.For and a few small per-call slices. None
// grows with B or T; the workspace comes from ScratchSize.
const maxAllocs = 40

// TestAllocs: every registered kind's Forward and Backward allocate the same
// few objects at (B, T) = (1, 64) and (2, 256).
func TestAllocs(t *testing.T) {
	for _, k := range registry.All() {
		f1, b1 := allocs(t, k, 1, 64)
		f2, b2 := allocs(t, k, 2, 256)
		t.Logf("%-10s Forward %2.0f, %2.0f; Backward %2.0f, %2.0f", k.Name, f1, f2, b1, b2)
		if f1 != f2 || b1 != b2 || max(f1, b1) > maxAllocs {
			t.Errorf("%s: Forward allocates %v and %v, Backward %v and %v at (B,T) = (1,64) and (2,256); want equal counts ≤ %d",
				k.Name, f1, f2, b1, b2, maxAllocs)
		}
	}
}
