// Package proj is the linear projections of the attention-like mixers
// (full and sparse attention, entmax and top-k attention, LSH attention and
// the four AFT kinds): the maps y = x·Wᵀ + b, D→D, that turn a block's
// input into queries, keys and values, and the mixed rows back into the
// residual stream. A kind owns only its mixing core; Set owns the
// projections' parameters by name, their forward and their accumulating
// backward, for every kind alike.
//
// The naive twins of the kinds (attn.Naive, the AFT and LSH twins in the
// tests) keep their own plain-loop projections, so that they stay an
// independent oracle for this code too.
package proj

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// Set is a mixer's projections, in order: the input projections (q, k, v;
// LSH's shared qk and v) and last the output projection o.
type Set[F kernels.Float] struct {
	D     int
	Names []string
	// Prec is the arithmetic of the products in training (Forward without
	// UseBF16, and Backward).
	Prec kernels.Prec
	w, g [][]F           // weight [D,D], bias [D] of each name, in Names order
	bf16 []kernels.BF16B // the weights packed in bf16 (UseBF16), else nil
	fp32 []bool          // projections kept in F whatever Prec (KeepFP32)
}

// KeepFP32 keeps projections idx in F under bf16 (Prec and UseBF16 alike):
// top-k attention keeps its queries and keys so, because its scores select
// keys.
func (s *Set[F]) KeepFP32(idx ...int) {
	s.fp32 = make([]bool, len(s.Names))
	for _, i := range idx {
		s.fp32[i] = true
	}
}

// prec is projection i's product arithmetic in training.
func (s *Set[F]) prec(i int) kernels.Prec {
	if s.fp32 != nil && s.fp32[i] {
		return kernels.PrecFP32
	}
	return s.Prec
}

// New returns the projections named names (the last one the output
// projection, o) of d channels, with products in precision p.
func New[F kernels.Float](d int, p kernels.Prec, names ...string) Set[F] {
	return Set[F]{D: d, Prec: p, Names: names}
}

// Params lists a weight [D,D] and a bias [D] per name, as mixer.Linear
// names them ("q.weight", "q.bias", …); the output projection is
// initialised as a residual projection.
func (s *Set[F]) Params() []mixer.ParamSpec {
	var ps []mixer.ParamSpec
	for i, n := range s.Names {
		ps = append(ps, mixer.Linear(n, s.D, s.D, i == len(s.Names)-1)...)
	}
	return ps
}

// Bind takes the projections' storage from the front of the mixer's
// parameters and gradients (Params order) and returns the rest. It panics
// when fewer are given.
func (s *Set[F]) Bind(w, g [][]F) (restW, restG [][]F) {
	n := 2 * len(s.Names)
	if len(w) < n || len(g) < n {
		panic(fmt.Sprintf("proj: Bind wants at least %d parameter and gradient slices, got %d and %d", n, len(w), len(g)))
	}
	s.w, s.g = w[:n], g[:n]
	return w[n:], g[n:]
}

// Bound returns the storage Bind took: weight and bias of each projection,
// and their gradients.
func (s *Set[F]) Bound() (w, g [][]F) { return s.w, s.g }

// Out is the index of the output projection.
func (s *Set[F]) Out() int { return len(s.Names) - 1 }

// Weights returns projection i's weight [D,D] and bias [D].
func (s *Set[F]) Weights(i int) (w, b []F) { return s.w[2*i], s.w[2*i+1] }

// UseBF16 packs the bound float32 weights in bf16, and from then on Forward
// multiplies in bf16 (inference: the packed copy does not follow later
// changes of the weights, and Backward stays in F), packing on at most
// threads threads. It returns an error for float64 projections.
func (s *Set[F]) UseBF16(threads int) error {
	var z F
	if _, ok := any(z).(float32); !ok {
		return fmt.Errorf("proj: bf16 needs float32 weights")
	}
	s.bf16 = make([]kernels.BF16B, len(s.Names))
	for i := range s.bf16 {
		if s.fp32 != nil && s.fp32[i] {
			continue
		}
		kernels.PackBF16B(mixer.Budget(threads), &s.bf16[i], true, s.D, s.D, any(s.w[2*i]).([]float32), s.D)
	}
	return nil
}

// Forward writes y [n,D] = x·W_iᵀ + b_i for the n rows x [n,D]
// (kernels.LinearForward, in bf16 on the packed weights after UseBF16), on
// at most threads threads (a resolved budget, ≥ 1).
func (s *Set[F]) Forward(threads, i int, y, x []F, n int) {
	D := s.D
	var wb *kernels.BF16B
	if s.bf16 != nil && s.bf16[i].Data != nil {
		wb = &s.bf16[i]
	}
	kernels.LinearForward(threads, s.prec(i), y[:n*D], x[:n*D], s.w[2*i], wb, s.w[2*i+1], n, D, D, false)
}

// PacksInput says whether projection i multiplies its input in bf16 (in
// training in precision bf16 or after UseBF16, and not kept in F), so
// that a caller may pack an input once for several projections and give
// it to ForwardPacked and BackwardPacked.
func (s *Set[F]) PacksInput(i int) bool {
	var z F
	if _, ok := any(z).(float32); !ok {
		return false
	}
	if s.bf16 != nil {
		return s.bf16[i].Data != nil
	}
	return s.prec(i) == kernels.PrecBF16
}

// ForwardPacked is Forward for a projection that PacksInput, with x [n,D]
// given packed (as kernels.PackBF16A(_, xa, false, n, D, x, D) packs it):
// the same products, bit for bit.
func (s *Set[F]) ForwardPacked(threads, i int, y []F, xa *kernels.BF16A, n int) {
	D := s.D
	f := kernels.F32[F]
	var wb *kernels.BF16B
	if s.bf16 != nil {
		wb = &s.bf16[i]
	}
	kernels.LinearForwardBF16(threads, f(y[:n*D]), nil, kernels.PackedA(xa), f(s.w[2*i]), wb, f(s.w[2*i+1]), n, D, D)
}

// BackwardPacked is Backward for a projection that PacksInput in
// training, with x [n,D] given packed as op(B) of the weight gradient (as
// kernels.PackBF16B(_, xb, false, n, D, x, D) packs it): the same products,
// bit for bit.
func (s *Set[F]) BackwardPacked(threads, i int, dx, dy []F, xb *kernels.BF16B, n int, set bool) {
	D := s.D
	f := kernels.F32[F]
	kernels.LinearBackwardBF16(threads, f(dx[:n*D]), f(s.g[2*i]), f(s.g[2*i+1]), f(dy[:n*D]), kernels.PackedB(xb), f(s.w[2*i]), n, D, D, set)
}

// Backward is Forward's backward (kernels.LinearBackward): it adds dyᵀ·x
// to W_i's gradient and the column sums of dy to b_i's, and adds dy·W_i
// to dx (or writes it there, with set). Every product has n rows of D and
// runs on at most threads threads.
func (s *Set[F]) Backward(threads, i int, dx, dy, x []F, n int, set bool) {
	D := s.D
	kernels.LinearBackward(threads, s.prec(i), dx[:n*D], s.g[2*i], s.g[2*i+1], dy[:n*D], x[:n*D], s.w[2*i], n, D, D, set)
}
