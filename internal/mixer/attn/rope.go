package attn

import (
	"math"
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// DefaultRopeBase is the base of RoPE's frequencies when "rope_base" is
// not given.
const DefaultRopeBase = 10000

// Rope is the rotary position embedding (RoPE, Su et al. 2021) in the
// "rotate half" convention of GPT-NeoX and LLaMA. Within each head of
// width Dh, dimension a < Dh/2 is paired with a + Dh/2, and at absolute
// position p (the token's index from 0) the pair is rotated by the angle
// p·θ_a, θ_a = Base^(−2a/Dh):
//
//	(x_a, x_{a+Dh/2}) → (x_a·cos pθ_a − x_{a+Dh/2}·sin pθ_a, x_{a+Dh/2}·cos pθ_a + x_a·sin pθ_a).
//
// The attention kinds apply it to q and k after their projections and
// before the 1/√Dh scale, so a score depends on the positions only
// through their difference. Its backward is the inverse rotation (the
// transpose). The cosines and sines are computed in float64 into a table
// kept for the longest length seen, and each rotation is computed in
// float64 and rounded to the element type once.
type Rope struct {
	Base  float64
	H, Dh int
	mu    sync.Mutex
	tab   *ropeTable // replaced, never mutated, when a longer length comes
}

// ropeTable holds cos and sin of p·θ_a for positions p < n, [n, Dh/2] each.
type ropeTable struct {
	n        int
	cos, sin []float64
}

// RopeOption reads the options "rope" (bool, default false) and
// "rope_base" (default DefaultRopeBase) of an attention kind with d
// channels in heads heads, and returns the Rope, or nil without "rope". With
// alibi set (the kind's ALiBi option is on) "rope" is refused, as it is
// for an odd head width; "rope_base" must be positive and is refused
// without "rope". Errors go to o (o.Err reports them).
func RopeOption(o *mixer.Options, d, heads int, alibi bool) *Rope {
	if heads < 1 || d%heads != 0 {
		heads = 0 // the kind reports the heads; here only the width's parity matters
	}
	dh := 0
	if heads > 0 {
		dh = d / heads
	}
	on := o.Bool("rope", false)
	base := o.Float("rope_base", DefaultRopeBase)
	switch {
	case o.Has("rope_base") && !on:
		o.Fail("rope_base", "is set but rope is not true")
	case !on:
	case !(base > 0) || math.IsInf(base, 0):
		o.Fail("rope_base", "must be a positive number, got %g", base)
	case alibi:
		o.Fail("rope", "cannot be combined with alibi: choose one position scheme")
	case dh%2 != 0:
		o.Fail("rope", "needs an even head width (d_model/n_heads = %d)", dh)
	case dh > 0:
		return &Rope{Base: base, H: heads, Dh: dh}
	}
	return nil
}

// table returns a table covering positions < n.
func (r *Rope) table(n int) *ropeTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tab != nil && r.tab.n >= n {
		return r.tab
	}
	if r.tab != nil {
		n = max(n, 2*r.tab.n) // decoding grows by one position at a time
	}
	half := r.Dh / 2
	t := &ropeTable{n: n, cos: make([]float64, n*half), sin: make([]float64, n*half)}
	for a := range half {
		th := math.Pow(r.Base, -2*float64(a)/float64(r.Dh))
		for p := range n {
			s, c := math.Sincos(float64(p) * th)
			t.cos[p*half+a], t.sin[p*half+a] = c, s
		}
	}
	r.tab = t
	return t
}

// RopeApply rotates x [B,T,D] (D = H·Dh) in place by r: row b·T + t at
// position t, or by the inverse rotation when inv (the backward), on at
// most threads threads. A nil r does nothing.
func RopeApply[F kernels.Float](r *Rope, threads int, x []F, B, T int, inv bool) {
	if r == nil {
		return
	}
	tab := r.table(T)
	D := r.H * r.Dh
	parallel.For(threads, B*T, 64, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			ropeRow(tab, x[i*D:(i+1)*D], i%T, r.Dh, inv)
		}
	})
}

// RopeRows rotates the rows x [n,D] in place by r, row i at position
// pos[i] (decoding). A nil r does nothing.
func RopeRows[F kernels.Float](r *Rope, x []F, pos []int) {
	if r == nil {
		return
	}
	m := 0
	for _, p := range pos {
		m = max(m, p+1)
	}
	tab := r.table(m)
	D := r.H * r.Dh
	for i, p := range pos {
		ropeRow(tab, x[i*D:(i+1)*D], p, r.Dh, false)
	}
}

// ropeRow rotates one row of every head at position p.
func ropeRow[F kernels.Float](t *ropeTable, x []F, p, dh int, inv bool) {
	half := dh / 2
	c, s := t.cos[p*half:(p+1)*half], t.sin[p*half:(p+1)*half]
	for h := 0; h < len(x); h += dh {
		lo, hi := x[h:h+half], x[h+half:h+dh]
		for a := range half {
			x0, x1, sa := float64(lo[a]), float64(hi[a]), s[a]
			if inv {
				sa = -sa
			}
			lo[a] = F(x0*c[a] - x1*sa)
			hi[a] = F(x1*c[a] + x0*sa)
		}
	}
}

// RopeRef rotates x [B,T,D] with heads of width dh in place by the
// definition, each angle's cosine and sine computed afresh in float64: the
// naive twins' oracle, independent of Rope's table. base 0 does nothing.
func RopeRef[F kernels.Float](x []F, B, T, D, dh int, base float64, inv bool) {
	if base == 0 {
		return
	}
	half := dh / 2
	for i := range B * T {
		p := float64(i % T)
		for h := 0; h < D; h += dh {
			for a := range half {
				s, c := math.Sincos(p * math.Pow(base, -2*float64(a)/float64(dh)))
				if inv {
					s = -s
				}
				j0, j1 := i*D+h+a, i*D+h+a+half
				x0, x1 := float64(x[j0]), float64(x[j1])
				x[j0] = F(x0*c - x1*s)
				x[j1] = F(x1*c + x0*s)
			}
		}
	}
}

// RopeBase returns r's base, or 0 (RopeRef's "none") for a nil r.
func RopeBase(r *Rope) float64 {
	if r == nil {
		return 0
	}
	return r.Base
}
