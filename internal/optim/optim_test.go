package optim

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSchedule(t *testing.T) {
	s := Schedule{LR: 1e-3, MinLR: 1e-4, Warmup: 4, Steps: 14}
	for _, c := range []struct {
		step int
		want float64
	}{
		{0, 0.25e-3}, {1, 0.5e-3}, {3, 1e-3}, // warmup reaches LR on update W−1
		{4, 1e-3},              // cosine starts at LR
		{9, 1e-4 + 0.5*0.9e-3}, // halfway: cos(π/2) = 0
		{13, 1e-4 + 0.5*0.9e-3*(1+math.Cos(math.Pi*0.9))},
		{14, 1e-4}, {100, 1e-4}, // after the end: MinLR
	} {
		if got := s.At(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("At(%d) = %v, want %v", c.step, got, c.want)
		}
	}
	// No warmup: step 0 is the peak.
	if got := (Schedule{LR: 2, Steps: 10}).At(0); got != 2 {
		t.Errorf("no-warmup At(0) = %v, want 2", got)
	}
	// Constant after the warmup, also past Steps.
	c := Schedule{LR: 1e-3, Warmup: 4, Steps: 14, Constant: true}
	for step, want := range map[int]float64{0: 0.25e-3, 3: 1e-3, 4: 1e-3, 9: 1e-3, 13: 1e-3, 100: 1e-3} {
		if got := c.At(step); got != want {
			t.Errorf("constant At(%d) = %v, want %v", step, got, want)
		}
	}
}

func TestGroups(t *testing.T) {
	got := Groups([]int{3, 2, 4, 1, 5}, []bool{false, true, true, false, false}, nil)
	want := []Group{{0, 3, true, false}, {3, 9, false, false}, {9, 15, true, false}}
	if !slices.Equal(got, want) {
		t.Errorf("Groups = %v, want %v", got, want)
	}
	got = Groups([]int{3, 2, 4, 1, 5}, []bool{false, true, true, false, false}, []bool{true, true, false, false, true})
	want = []Group{{0, 3, true, true}, {3, 5, false, true}, {5, 9, false, false}, {9, 10, true, false}, {10, 15, true, true}}
	if !slices.Equal(got, want) {
		t.Errorf("Groups with frozen = %v, want %v", got, want)
	}
}

// TestAdamWFrozen checks that Update leaves a frozen group's parameters
// and moments untouched, weight decay included, and updates the rest.
func TestAdamWFrozen(t *testing.T) {
	p := []float64{1, 1, 1}
	g := []float64{0.5, 0.5, 0.5}
	o := NewAdamW[float64](3, []Group{{0, 1, true, true}, {1, 3, true, false}}, 0.9, 0.999, 1e-8, 0.1)
	o.Update(p, g, 0.01)
	if p[0] != 1 || o.M[0] != 0 || o.V[0] != 0 {
		t.Errorf("frozen p[0] = %v, m %v, v %v; want 1, 0, 0", p[0], o.M[0], o.V[0])
	}
	if p[1] == 1 || p[2] == 1 {
		t.Errorf("unfrozen parameters %v did not move", p[1:])
	}
}

// TestAdamWStep checks two updates against values worked out by hand from
// the formula in the package doc (the same as torch.optim.AdamW).
func TestAdamWStep(t *testing.T) {
	p := []float64{1, 1}
	g := []float64{0.5, 0.5}
	o := NewAdamW[float64](2, []Group{{0, 1, true, false}, {1, 2, false, false}}, 0.9, 0.999, 1e-8, 0.1)
	lr := 0.01
	o.Update(p, g, lr)
	// Step 1: m̂ = g, v̂ = g², so the Adam term is g/(|g|+ε) ≈ 1.
	adam := 0.5 / (0.5 + 1e-8)
	want := []float64{1 - lr*(adam+0.1*1), 1 - lr*adam}
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-15 {
			t.Errorf("step 1 p[%d] = %.17g, want %.17g", i, p[i], want[i])
		}
	}
	// Step 2 with the same gradient: m̂ and v̂ are again g and g².
	prev := slices.Clone(p)
	o.Update(p, g, lr)
	for i, d := range []float64{0.1, 0} {
		w := prev[i] - lr*(adam+d*prev[i])
		if math.Abs(p[i]-w) > 1e-15 {
			t.Errorf("step 2 p[%d] = %.17g, want %.17g", i, p[i], w)
		}
	}
	if o.Step != 2 {
		t.Errorf("Step = %d", o.Step)
	}
	if g[0] != 0.5 || g[1] != 0.5 {
		t.Error("Update modified the gradients")
	}
}

func TestClipGradNorm(t *testing.T) {
	g := []float32{3, 4} // norm 5
	n := ClipGradNorm(1, g, 1)
	if n != 5 {
		t.Errorf("norm = %v", n)
	}
	c := 1 / (5 + 1e-6)
	if math.Abs(float64(g[0])-3*c) > 1e-7 || math.Abs(float64(g[1])-4*c) > 1e-7 {
		t.Errorf("clipped = %v", g)
	}
	g = []float32{3, 4}
	ClipGradNorm(1, g, 10) // below the threshold: unchanged
	if g[0] != 3 || g[1] != 4 {
		t.Errorf("unclipped = %v", g)
	}
	ClipGradNorm(1, g, 0) // disabled
	if g[0] != 3 || g[1] != 4 {
		t.Errorf("disabled = %v", g)
	}
}

// TestGradNorm checks GradNorm against a sum in extended precision on
// lengths around its blocks and its eight sums, exactly on integers, and
// that its bits do not depend on the threads.
func TestGradNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 7, 8, 9, 100, normBlock - 1, normBlock, normBlock + 5, 3*normBlock + 13} {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(rng.NormFloat64() * math.Exp(4*rng.Float64()-2))
		}
		want := new(big.Float).SetPrec(200)
		for _, v := range g {
			x := new(big.Float).SetPrec(200).SetFloat64(float64(v))
			want.Add(want, x.Mul(x, x))
		}
		w, _ := want.Sqrt(want).Float64()
		got := GradNorm(1, g)
		if math.Abs(got-w) > 1e-13*w {
			t.Errorf("n=%d: GradNorm %v, want %v", n, got, w)
		}
		for _, th := range []int{2, 3, 8} {
			if o := GradNorm(th, g); math.Float64bits(o) != math.Float64bits(got) {
				t.Errorf("n=%d: %d threads give %v, one gives %v", n, th, o, got)
			}
		}
	}
	g := make([]float64, 1001) // 0, 1, 2, …: Σ i² = n(n+1)(2n+1)/6, exact in float64
	for i := range g {
		g[i] = float64(i)
	}
	if got, want := GradNorm(2, g), math.Sqrt(1000*1001*2001/6); got != want {
		t.Errorf("GradNorm of 0…1000 = %v, want %v", got, want)
	}
}
