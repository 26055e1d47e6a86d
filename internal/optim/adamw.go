package optim

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Group is a contiguous range [Lo,Hi) of the parameter slab, whether
// weight decay applies to it, and whether it is frozen (Update leaves its
// parameters and moments as they are).
type Group struct {
	Lo, Hi int
	Decay  bool
	Frozen bool
}

// Groups merges consecutive ranges of the given sizes into groups, one per
// run of equal flags. noDecay[i] says range i (of size sizes[i]) is
// excluded from weight decay, frozen[i] (frozen may be nil: nothing is)
// that it is not updated at all. Groups panics if the lengths differ.
func Groups(sizes []int, noDecay, frozen []bool) []Group {
	if len(sizes) != len(noDecay) || frozen != nil && len(frozen) != len(sizes) {
		panic("optim: Groups with sizes and flags of different lengths")
	}
	var gs []Group
	off := 0
	for i, n := range sizes {
		g := Group{Lo: off, Hi: off + n, Decay: !noDecay[i], Frozen: frozen != nil && frozen[i]}
		if k := len(gs) - 1; k >= 0 && gs[k].Decay == g.Decay && gs[k].Frozen == g.Frozen && gs[k].Hi == off {
			gs[k].Hi += n
		} else {
			gs = append(gs, g)
		}
		off += n
	}
	return gs
}

// AdamW is the optimiser state for one parameter slab: hyper-parameters,
// groups, the first and second moments M and V (same length as the slab) and
// the number of updates done so far. Threads is the thread budget of
// Update (0: the default, parallel.Threads() at the time of the call); the
// result does not depend on it.
type AdamW[F kernels.Float] struct {
	Beta1, Beta2, Eps, WeightDecay float64
	Groups                         []Group
	M, V                           []F
	Step                           int
	Threads                        int
}

// NewAdamW returns AdamW state with zero moments for a slab of n parameters.
// NewAdamW panics if the groups do not tile [0,n) in order.
func NewAdamW[F kernels.Float](n int, groups []Group, beta1, beta2, eps, weightDecay float64) *AdamW[F] {
	at := 0
	for _, g := range groups {
		if g.Lo != at || g.Hi < g.Lo {
			panic("optim: groups do not tile the slab in order")
		}
		at = g.Hi
	}
	if at != n {
		panic("optim: groups do not cover the slab")
	}
	return &AdamW[F]{Beta1: beta1, Beta2: beta2, Eps: eps, WeightDecay: weightDecay,
		Groups: groups, M: make([]F, n), V: make([]F, n)}
}

// Update applies one AdamW step with learning rate lr to params given grads
// and increments Step. Update panics if params or grads do not have the
// length of the moments.
func (o *AdamW[F]) Update(params, grads []F, lr float64) {
	if len(params) != len(o.M) || len(grads) != len(o.M) {
		panic(fmt.Sprintf("optim: Update with %d params and %d grads, state has %d", len(params), len(grads), len(o.M)))
	}
	o.Step++
	th := o.Threads
	if th < 1 {
		th = parallel.Threads()
	}
	for _, g := range o.Groups {
		if g.Frozen {
			continue
		}
		wd := 0.0
		if g.Decay {
			wd = o.WeightDecay
		}
		parallel.For(th, g.Hi-g.Lo, 1<<14, func(_, lo, hi int) {
			lo, hi = lo+g.Lo, hi+g.Lo
			kernels.AdamW(th, params[lo:hi], grads[lo:hi], o.M[lo:hi], o.V[lo:hi], lr, o.Beta1, o.Beta2, o.Eps, wd, o.Step)
		})
	}
}

// GradNorm returns the Euclidean norm of grads, accumulated in float64.
func GradNorm[F kernels.Float](grads []F) float64 {
	var s float64
	for _, g := range grads {
		s += float64(g) * float64(g)
	}
	return math.Sqrt(s)
}

// ClipGradNorm scales grads in place by min(1, maxNorm/(‖grads‖+1e-6)), as
// torch.nn.utils.clip_grad_norm_, and returns the norm before clipping.
// maxNorm ≤ 0 disables clipping.
func ClipGradNorm[F kernels.Float](grads []F, maxNorm float64) float64 {
	n := GradNorm(grads)
	if maxNorm > 0 {
		if c := maxNorm / (n + 1e-6); c < 1 {
			for i := range grads {
				grads[i] = F(float64(grads[i]) * c)
			}
		}
	}
	return n
}
