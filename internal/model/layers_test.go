package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// layerCase is one layer under a finite-difference check: fwd computes the
// output from the current inputs; bwd accumulates the gradients of
// Σ out·dout into grads (which the harness zeroes first).
type layerCase struct {
	name   string
	inputs map[string][]float64 // perturbed by finite differences
	grads  map[string][]float64 // same keys; zeroed before bwd
	outLen int
	fwd    func(out []float64)
	bwd    func(dout []float64)
	// scalar, if set, is checked instead of Σ out·r (for losses).
	scalar func() float64
}

func randVec(rng *rand.Rand, n int, s float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() * s
	}
	return v
}

func runLayerCase(t *testing.T, c layerCase) {
	t.Run(c.name, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 11))
		r := randVec(rng, c.outLen, 1)
		loss := func() float64 {
			if c.scalar != nil {
				return c.scalar()
			}
			out := make([]float64, c.outLen)
			c.fwd(out)
			var s float64
			for i := range out {
				s += out[i] * r[i]
			}
			return s
		}
		out := make([]float64, c.outLen)
		c.fwd(out)
		for _, g := range c.grads {
			clear(g)
		}
		c.bwd(r)
		for name, v := range c.inputs {
			checkFD(t, name, v, c.grads[name], loss, rng, 20, 1e-7)
		}
	})
}

func TestLayerFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const B, T, D, V, H = 2, 3, 4, 5, 6
	N := B * T
	tokens := []int32{1, 4, 1, 0, 3, 4}
	pad := []bool{false, false, true, false, true, false}

	embed, pos := randVec(rng, V*D, 1), randVec(rng, 4*D, 1)
	dembed, dpos := make([]float64, V*D), make([]float64, 4*D)
	runLayerCase(t, layerCase{
		name:   "embedding",
		inputs: map[string][]float64{"embed": embed, "pos": pos},
		grads:  map[string][]float64{"embed": dembed, "pos": dpos},
		outLen: N * D,
		fwd:    func(out []float64) { embeddingForward(out, tokens, embed, pos, B, T, D) },
		bwd:    func(dout []float64) { embeddingBackward(dembed, dpos, dout, tokens, B, T, D) },
	})

	x, w, b := randVec(rng, N*D, 1), randVec(rng, V*D, 1), randVec(rng, V, 1)
	dx, dw, db := make([]float64, N*D), make([]float64, V*D), make([]float64, V)
	runLayerCase(t, layerCase{
		name:   "linear",
		inputs: map[string][]float64{"x": x, "w": w, "b": b},
		grads:  map[string][]float64{"x": dx, "w": dw, "b": db},
		outLen: N * V,
		fwd: func(out []float64) {
			kernels.LinearForward(parallel.Threads(), kernels.PrecFP32, out, x, w, nil, b, N, D, V, false)
		},
		bwd: func(dout []float64) {
			kernels.LinearBackward(parallel.Threads(), kernels.PrecFP32, dx, dw, db, dout, x, w, N, D, V, false)
		},
	})

	lw, lb := randVec(rng, D, 1), randVec(rng, D, 1)
	dlw, dlb := make([]float64, D), make([]float64, D)
	mean, rstd := make([]float64, N), make([]float64, N)
	runLayerCase(t, layerCase{
		name:   "layernorm",
		inputs: map[string][]float64{"x": x, "w": lw, "b": lb},
		grads:  map[string][]float64{"x": dx, "w": dlw, "b": dlb},
		outLen: N * D,
		fwd:    func(out []float64) { layerNormForward(parallel.Threads(), out, mean, rstd, x, lw, lb, N, D) },
		bwd: func(dout []float64) {
			layerNormBackward(parallel.Threads(), dx, dlw, dlb, dout, x, lw, mean, rstd, N, D)
		},
	})

	runLayerCase(t, layerCase{
		name:   "gelu",
		inputs: map[string][]float64{"x": x},
		grads:  map[string][]float64{"x": dx},
		outLen: N * D,
		fwd:    func(out []float64) { kernels.GeluForward(parallel.Threads(), out, x) },
		bwd:    func(dout []float64) { kernels.GeluBackward(parallel.Threads(), dx, x, dout) },
	})

	w1, b1, w2, b2 := randVec(rng, H*D, 0.5), randVec(rng, H, 0.5), randVec(rng, D*H, 0.5), randVec(rng, D, 0.5)
	dw1, db1, dw2, db2 := make([]float64, H*D), make([]float64, H), make([]float64, D*H), make([]float64, D)
	hh, gg, dg, dh := make([]float64, N*H), make([]float64, N*H), make([]float64, N*H), make([]float64, N*H)
	runLayerCase(t, layerCase{
		name:   "ff",
		inputs: map[string][]float64{"x": x, "fc1.w": w1, "fc1.b": b1, "fc2.w": w2, "fc2.b": b2},
		grads:  map[string][]float64{"x": dx, "fc1.w": dw1, "fc1.b": db1, "fc2.w": dw2, "fc2.b": db2},
		outLen: N * D,
		fwd: func(out []float64) {
			ffForward(parallel.Threads(), kernels.PrecFP32, out, hh, gg, x, w1, b1, w2, b2, nil, N, D, H)
		},
		bwd: func(dout []float64) {
			ffBackward(parallel.Threads(), kernels.PrecFP32, dx, dw1, db1, dw2, db2, dg, dh, dout, x, hidden[float64]{h: hh}, gg, w1, w2, N, D, H)
		},
	})

	for _, pc := range []struct {
		name  string
		pad   []bool
		first bool
	}{{"pool", nil, false}, {"pool with pad", pad, false}, {"pool first", nil, true}, {"pool first with pad", pad, true}} {
		runLayerCase(t, layerCase{
			name:   pc.name,
			inputs: map[string][]float64{"x": x},
			grads:  map[string][]float64{"x": dx},
			outLen: B * D,
			fwd:    func(out []float64) { poolForward(out, x, pc.pad, pc.first, B, T, D) },
			bwd:    func(dout []float64) { poolBackward(dx, dout, pc.pad, pc.first, B, T, D) },
		})
	}

	logits := randVec(rng, N*V, 2)
	dlogits := make([]float64, N*V)
	targets := []int32{0, -1, 4, 2, -1, 1}
	for _, eps := range []float64{0, 0.1, 0.5} {
		runLayerCase(t, layerCase{
			name:   fmt.Sprintf("cross-entropy ignore -1, label smoothing %g", eps),
			inputs: map[string][]float64{"logits": logits},
			grads:  map[string][]float64{"logits": dlogits},
			outLen: 1,
			fwd:    func(out []float64) {},
			scalar: func() float64 { l, _ := crossEntropyForward(parallel.Threads(), logits, targets, N, V, eps); return l },
			bwd: func([]float64) {
				_, n := crossEntropyForward(parallel.Threads(), logits, targets, N, V, eps)
				crossEntropyBackward(parallel.Threads(), dlogits, logits, targets, N, V, 1/float64(n), eps)
			},
		})
	}
}

// TestCrossEntropyKnown checks a value worked out by hand: uniform logits
// over V classes give loss log V, and ignored rows do not count.
func TestCrossEntropyKnown(t *testing.T) {
	logits := []float64{0, 0, 0, 0, 5, 1, 2, 3}
	l, n := crossEntropyForward(parallel.Threads(), logits, []int32{2, -1}, 2, 4, 0)
	if n != 1 || l != 1.3862943611198906 { // ln 4
		t.Errorf("loss %v over %d rows, want ln 4 over 1", l, n)
	}
	if l, n := crossEntropyForward(parallel.Threads(), logits, []int32{-1, -1}, 2, 4, 0); l != 0 || n != 0 {
		t.Errorf("all ignored: loss %v over %d rows", l, n)
	}
	// Smoothing: uniform logits stay at ln 4 whatever ε; on the second
	// row (target 0, log-probabilities l_j) the loss is
	// (1−ε)(−l_0) + ε·mean_j(−l_j).
	if l, _ := crossEntropyForward(parallel.Threads(), logits, []int32{2, -1}, 2, 4, 0.3); math.Abs(l-1.3862943611198906) > 1e-15 {
		t.Errorf("smoothed uniform row: %v, want ln 4", l)
	}
	lse := math.Log(math.Exp(5) + math.Exp(1) + math.Exp(2) + math.Exp(3))
	want := 0.7*(lse-5) + 0.3*(lse-(5+1+2+3)/4.0)
	if l, _ := crossEntropyForward(parallel.Threads(), logits, []int32{-1, 0}, 2, 4, 0.3); math.Abs(l-want) > 1e-12 {
		t.Errorf("smoothed row: %v, want %v", l, want)
	}
}
