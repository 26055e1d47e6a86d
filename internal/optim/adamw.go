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

// GradNorm returns the Euclidean norm of grads, its squares accumulated in
// float64: by blocks of normBlock values, each in eight running sums
// added in a fixed order, and the blocks' sums in order. It runs on up to
// threads goroutines (0: parallel.Threads()), with a result that does not
// depend on threads.
func GradNorm[F kernels.Float](threads int, grads []F) float64 {
	nb := (len(grads) + normBlock - 1) / normBlock
	if nb == 0 {
		return 0
	}
	if threads < 1 {
		threads = parallel.Threads()
	}
	sums := make([]float64, nb)
	parallel.For(threads, nb, 1, func(_, lo, hi int) {
		for b := lo; b < hi; b++ {
			sums[b] = sumSquares(grads[b*normBlock : min((b+1)*normBlock, len(grads))])
		}
	})
	var s float64
	for _, v := range sums {
		s += v
	}
	return math.Sqrt(s)
}

// normBlock is the values GradNorm sums as one block.
const normBlock = 1 << 14

// sumSquares returns Σ x² in float64, in eight running sums (value i in
// sum i mod 8) added pairwise at the end: eight independent chains of
// additions instead of one.
func sumSquares[F kernels.Float](x []F) float64 {
	var a [8]float64
	n := len(x) &^ 7
	for i := 0; i < n; i += 8 {
		v := x[i : i+8 : i+8]
		a0, a1, a2, a3 := float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])
		a4, a5, a6, a7 := float64(v[4]), float64(v[5]), float64(v[6]), float64(v[7])
		a[0] += a0 * a0
		a[1] += a1 * a1
		a[2] += a2 * a2
		a[3] += a3 * a3
		a[4] += a4 * a4
		a[5] += a5 * a5
		a[6] += a6 * a6
		a[7] += a7 * a7
	}
	for i := n; i < len(x); i++ {
		v := float64(x[i])
		a[i-n] += v * v
	}
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// ClipGradNorm scales grads in place by min(1, maxNorm/(‖grads‖+1e-6)), as
// torch.nn.utils.clip_grad_norm_, and returns the norm before clipping
// (GradNorm). maxNorm ≤ 0 disables clipping. It runs on up to threads
// goroutines (0: parallel.Threads()), with a result that does not depend
// on threads.
func ClipGradNorm[F kernels.Float](threads int, grads []F, maxNorm float64) float64 {
	if threads < 1 {
		threads = parallel.Threads()
	}
	n := GradNorm(threads, grads)
	if maxNorm > 0 {
		if c := maxNorm / (n + 1e-6); c < 1 {
			parallel.For(threads, len(grads), normBlock, func(_, lo, hi int) {
				for i := lo; i < hi; i++ {
					grads[i] = F(float64(grads[i]) * c)
				}
			})
		}
	}
	return n
}
