package aft

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/proj"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// variant is one of the four AFT kinds.
type variant int

const (
	vSimple variant = iota
	vFull
	vLocal
	vConv
)

var variantNames = [...]string{"aft_simple", "aft_full", "aft_local", "aft_conv"}

// AFT is one Attention Free Transformer layer (any of the four kinds); see
// the package doc for the equations. It implements mixer.Mixer.
//
// Shapes: B batch, T time, D channels, H bias groups (1, or the heads of
// aft_conv), Dh = D/H.
type AFT[F kernels.Float] struct {
	v      variant
	D      int
	H, Dh  int // bias groups: aft_conv heads, else 1
	S      int // window (aft_local, aft_conv)
	MaxLen int
	Causal bool
	// distant: the tokens beyond aft_local's or aft_conv's window
	// contribute with w = 0 (the paper's rule, option "distant", default
	// true); false makes the window a sliding window (w = −∞ beyond it).
	// aft_full has no distant tokens.
	distant bool

	proj   proj.Set[F] // q, k, v, o
	pb, gb []F         // pos_bias or rel_bias and its gradient (nil for aft_simple)
}

// The projections' indices in proj.
const (
	pq = iota
	pk
	pv
	po
)

// maxWindow bounds the window option, so that no size derived from it
// overflows.
const maxWindow = 1 << 30

func newAFT[F kernels.Float](v variant, c mixer.Config) (*AFT[F], error) {
	a := &AFT[F]{v: v, D: c.D, H: 1, MaxLen: c.MaxLen, Causal: c.Causal, proj: proj.New[F](c.D, kernels.PrecOf(c.Precision), "q", "k", "v", "o")}
	switch v {
	case vLocal:
		a.S = c.Opts.Int("window", 32)
		a.distant = c.Opts.Bool("distant", true)
		switch {
		case a.S < 1:
			c.Opts.Fail("window", "want ≥ 1, got %d", a.S)
		case a.S > maxWindow:
			c.Opts.Fail("window", "want ≤ %d, got %d", maxWindow, a.S)
		}
	case vConv:
		a.S = c.Opts.Int("window", 31)
		a.H = c.Opts.Int("heads", c.Heads)
		a.distant = c.Opts.Bool("distant", true)
		switch {
		case a.S < 1:
			c.Opts.Fail("window", "want ≥ 1, got %d", a.S)
		case a.S > maxWindow:
			c.Opts.Fail("window", "want ≤ %d, got %d", maxWindow, a.S)
		case !c.Causal && a.S%2 == 0:
			c.Opts.Fail("window", "must be odd when bidirectional (centred kernel), got %d", a.S)
		case a.H < 1 || c.D%a.H != 0:
			c.Opts.Fail("heads", "must be a positive divisor of d_model %d, got %d", c.D, a.H)
		}
	}
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	if c.D < 1 {
		return nil, fmt.Errorf("mixer: %s needs d_model ≥ 1, got %d", variantNames[v], c.D)
	}
	if (v == vFull || v == vLocal) && c.MaxLen < 1 {
		return nil, fmt.Errorf("mixer: %s needs max_len ≥ 1 for pos_bias, got %d", variantNames[v], c.MaxLen)
	}
	if v == vLocal {
		// T ≤ max_len: a wider window is the same band, and would only
		// make the work space grow with it.
		a.S = min(a.S, c.MaxLen)
	}
	a.Dh = a.D / a.H
	return a, nil
}

// Params returns q, k, v, o linears D→D (o projects into the residual
// stream), then pos_bias [MaxLen,MaxLen] (aft_full, aft_local) or
// rel_bias [H,S] (aft_conv), zero-initialised and excluded from weight decay.
func (a *AFT[F]) Params() []mixer.ParamSpec {
	ps := a.proj.Params()
	switch a.v {
	case vFull, vLocal:
		ps = append(ps, mixer.ParamSpec{Name: "pos_bias", Shape: []int{a.MaxLen, a.MaxLen}, Init: mixer.InitZeros, NoDecay: true})
	case vConv:
		ps = append(ps, mixer.ParamSpec{Name: "rel_bias", Shape: []int{a.H, a.S}, Init: mixer.InitZeros, NoDecay: true})
	}
	return ps
}

// Bind stores the parameter and gradient slices (in Params order).
func (a *AFT[F]) Bind(w, g [][]F) {
	w, g = a.proj.Bind(w, g)
	if len(w) > 0 {
		a.pb, a.gb = w[0], g[0]
	}
}

// UseBF16 implements mixer.BF16Inference: the q, k, v and o projections
// multiply in bf16 from now on; the sums stay in F.
func (a *AFT[F]) UseBF16(threads int) error { return a.proj.UseBF16(threads) }

// bias returns the positional parameter (nil for aft_simple) and its
// gradient.
func (a *AFT[F]) bias() (w, g []F) { return a.pb, a.gb }

// act is the activation layout: sq = σ(Q), v = V, r = R (the ratio), den
// (its denominator), y = σ(Q)⊙R [B,T,D] each; then per kind:
// aft_simple ek = exp(K − m) [B,T,D] and, causal, m (the running max)
// [B,T,D]; the banded kinds e = (exp(K−mK)⊙V | exp(K−mK)) [B,T,H,2,Dh],
// mw and c0 [B,T,H].
type act[F kernels.Float] struct {
	sq, v, r, den, y []F
	ek, m            []F
	e, mw, c0        []F
}

func (a *AFT[F]) split(buf []F, b, t int) act[F] {
	n := b * t * a.D
	var s act[F]
	take := func(k int) []F {
		x := buf[:k:k]
		buf = buf[k:]
		return x
	}
	s.sq, s.v, s.r, s.den, s.y = take(n), take(n), take(n), take(n), take(n)
	if a.v == vSimple {
		s.ek = take(n)
		if a.Causal {
			s.m = take(n)
		}
		return s
	}
	s.e = take(2 * n)
	s.mw, s.c0 = take(b*t*a.H), take(b*t*a.H)
	return s
}

// ActSize is 5·B·T·D, plus B·T·D (2·B·T·D causal) for aft_simple or
// 2·B·T·D + 2·B·T·H for the banded kinds.
func (a *AFT[F]) ActSize(b, t int) int {
	n := b * t * a.D
	if a.v == vSimple {
		if a.Causal {
			return 7 * n
		}
		return 6 * n
	}
	return 7*n + 2*b*t*a.H
}

// ScratchSize covers Forward (K [B,T,D], allowed-token counts [B,T+1],
// per-row-block maxima and sums [B,T/64,3D]) and Backward (dY, dQ, dV
// [B,T,D], the weighted gradients and their transposed sums [B,T,2D] each),
// plus per-thread rows or tiles (threads of them, the pass's budget).
// aft_simple's is 3·B·T·D, 4·D per row block of 64, one flag per block,
// 3·D and 4·D per thread.
func (a *AFT[F]) ScratchSize(b, t, threads int) int {
	n := b * t * a.D
	nblk := b * ((t + blockT - 1) / blockT)
	nt := mixer.Budget(threads)
	if a.v == vSimple {
		return 3*n + 4*nblk*a.D + nblk + 3*a.D + nt*4*a.D
	}
	return 7*n + b*(t+1) + nblk*3*a.D + nt*a.workerSize(t)
}

// Forward computes out = o(σ(Q)⊙R) for x [B,T,D]; see the package doc.
// Forward panics if p.T > MaxLen for aft_full or aft_local.
func (a *AFT[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	if (a.v == vFull || a.v == vLocal) && p.T > a.MaxLen {
		panic(fmt.Sprintf("aft: T=%d exceeds max_len %d", p.T, a.MaxLen))
	}
	N, D, th := p.B*p.T, a.D, mixer.Budget(p.Threads)
	p.Threads = th // the cores read the resolved budget
	s := a.split(act, p.B, p.T)
	x = x[:N*D]
	a.proj.Forward(th, pq, s.sq, x, N)
	sigmoid(th, s.sq)
	k := scratch[:N*D]
	a.proj.Forward(th, pk, k, x, N)
	a.proj.Forward(th, pv, s.v, x, N)
	if a.v == vSimple {
		a.simpleForward(s, k, scratch[N*D:], p)
	} else {
		a.bandForward(s, k, scratch[N*D:], p)
	}
	a.proj.Forward(th, po, out, s.y, N)
}

// Backward accumulates dx and the parameter gradients given dout and the
// matching Forward's act.
func (a *AFT[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	N, D, th := p.B*p.T, a.D, mixer.Budget(p.Threads)
	p.Threads = th // the cores read the resolved budget
	s := a.split(act, p.B, p.T)
	x, dout = x[:N*D], dout[:N*D]
	dy, dq, dv := scratch[:N*D], scratch[N*D:2*N*D], scratch[2*N*D:3*N*D]
	a.proj.Backward(th, po, dy, dout, s.y, N, true)
	// dq = dY⊙R⊙σ'(Q), the same for every kind.
	parallel.For(th, N, 64, func(_, lo, hi int) {
		for i := lo * D; i < hi*D; i++ {
			sq := s.sq[i]
			dq[i] = dy[i] * s.r[i] * sq * (1 - sq)
		}
	})
	// The cores turn dy into dk (in place) and dv.
	if a.v == vSimple {
		a.simpleBackward(dy, dv, scratch[3*N*D:], s, p)
	} else {
		a.bandBackward(dy, dv, s, scratch[3*N*D:], p)
	}
	dk := dy
	a.proj.Backward(th, pq, dx, dq, x, N, false)
	a.proj.Backward(th, pk, dx, dk, x, N, false)
	a.proj.Backward(th, pv, dx, dv, x, N, false)
}

// sigmoid replaces x with 1/(1+exp(−x)), on at most threads threads.
func sigmoid[F kernels.Float](threads int, x []F) {
	parallel.For(threads, len(x), 4096, func(_, lo, hi int) {
		seg := x[lo:hi]
		for i, v := range seg {
			seg[i] = -v
		}
		kernels.Exp(seg, seg)
		for i, v := range seg {
			seg[i] = 1 / (1 + v)
		}
	})
}
