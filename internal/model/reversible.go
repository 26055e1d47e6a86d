package model

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Reversible residual blocks (config "reversible": true), after RevNet
// (Gomez et al. 2017) as used by Reformer (Kitaev et al. 2020, Sec. 3):
//
//	x1 = x2 = embed[tokens] + pos[0:T]
//	for each block i:
//	    y1 = x1 + mixer_i(LN1_i(x2))
//	    y2 = x2 + FF_i(LN2_i(y1))
//	h = LN_f((x1 + x2)/2)
//
// Forward keeps only the last (y1, y2), their mean (LN_f's input) and one
// shared set of block internals. Backward walks the blocks in reverse,
// reconstructing each block's inputs from its outputs,
//
//	x2 = y2 − FF_i(LN2_i(y1)),   x1 = y1 − mixer_i(LN1_i(x2)),
//
// where each recomputation also refills the shared internals that the
// branch's backward needs. With dy1, dy2 the gradients at the outputs:
//
//	dy1 += J_FFᵀ·dy2           (gradient at y1 through both outputs)
//	dx2 = dy2 + J_mixerᵀ·dy1,  dx1 = dy1
//
// Mixer randomness replays because Pass.Seed depends only on (seed, step,
// layer). Activation memory is therefore independent of n_layers; the price
// is one extra forward of every block in backward (about a third more
// compute than plain training, as with checkpointing), and inputs that are
// reconstructed up to rounding: the error grows with depth and with the
// Lipschitz constant of the branches (float32 at 12 layers: see
// reversible_test.go). A mixer whose discrete choices (LSH buckets, top-k
// sets) flip under that rounding recomputes a different branch; this is rare
// but not impossible in float32.

// revSpans are the reversible-only buffers of the memory plan.
type revSpans struct {
	x2             span   // act [B,T,D]: the second stream (res[0] is the first)
	in1, in2       []span // act [n_layers]×[B,T,D]: block inputs, revKeep only
	d2             span   // grad [B,T,D]: gradient of the second stream (dres is the first)
	y1, y2, branch span   // grad [B,T,D]: streams being reconstructed, a branch output
}

// addActs lays out the reversible activations: res[0] holds the embeddings
// and then the first stream, res[n_layers] the streams' mean (LN_f's input);
// the res entries in between are unused and empty.
func (r *revSpans) addActs(p *Plan, c *Config, add func(slab, name string, count, n int) span) {
	BTD, L := p.B*p.T*c.DModel, c.NLayers
	p.res = make([]span, L+1)
	p.res[0] = add("act", "rev.x1", 1, BTD)
	r.x2 = add("act", "rev.x2", 1, BTD)
	p.res[L] = add("act", "rev.mean", 1, BTD)
	if c.revKeep {
		r.in1, r.in2 = make([]span, L), make([]span, L)
		for i := 0; i < L; i++ {
			r.in1[i] = add("act", "rev.in1 (test)", b2i(i == 0)*L, BTD)
			r.in2[i] = add("act", "rev.in2 (test)", b2i(i == 0)*L, BTD)
		}
	}
}

// addGrads lays out the reversible backward's buffers.
func (r *revSpans) addGrads(p *Plan, c *Config, add func(slab, name string, count, n int) span) {
	BTD := p.B * p.T * c.DModel
	r.d2 = add("grad", "rev.d2", 1, BTD)
	if !c.revKeep {
		r.y1 = add("grad", "rev.y1", 1, BTD)
		r.y2 = add("grad", "rev.y2", 1, BTD)
		r.branch = add("grad", "rev.branch", 1, BTD)
	}
}

// revForward runs the reversible blocks from the embeddings in res[0] and
// writes LN_f's input (x1+x2)/2 to res[n_layers].
func (m *Model[F]) revForward() error {
	c, p := m.Config, &m.plan
	x1, x2 := m.act(p.res[0]), m.act(p.rev.x2)
	copy(x2, x1)
	for i := 0; i < c.NLayers; i++ {
		if err := m.cancelled(); err != nil {
			return err
		}
		if c.revKeep {
			copy(m.act(p.rev.in1[i]), x1)
			copy(m.act(p.rev.in2[i]), x2)
		}
		m.blockMixerForward(i, x1, x1, x2) // y1 = x1 + mixer(LN1(x2))
		m.blockFFForward(i, x2, x2, x1)    // y2 = x2 + FF(LN2(y1))
	}
	mean := m.act(p.res[c.NLayers])
	parallel.For(p.Threads, len(mean), 1<<14, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			mean[k] = (x1[k] + x2[k]) / 2
		}
	})
	return nil
}

// revBackward accumulates the gradient of the last forward's loss into
// Grads, reconstructing block inputs (or, with revKeep, reading the kept
// ones). It leaves the forward's activations unchanged, so it may be called
// again.
func (m *Model[F]) revBackward() {
	c, p := m.Config, &m.plan
	L := c.NLayers
	d1, d2 := m.grad(p.dres), m.grad(p.rev.d2)
	clear(d1)
	m.headBackward(d1) // ∂loss/∂mean
	parallel.For(p.Threads, len(d1), 1<<14, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			d1[k] /= 2
			d2[k] = d1[k]
		}
	})
	if c.revKeep {
		for i := L - 1; i >= 0; i-- {
			y1 := m.act(p.res[0])
			if i < L-1 {
				y1 = m.act(p.rev.in1[i+1])
			}
			m.blockFFBackward(i, d1, d2, y1)
			m.blockMixerBackward(i, d2, d1, m.act(p.rev.in2[i]))
		}
	} else {
		y1, y2, br := m.grad(p.rev.y1), m.grad(p.rev.y2), m.grad(p.rev.branch)
		copy(y1, m.act(p.res[0]))
		copy(y2, m.act(p.rev.x2))
		for i := L - 1; i >= 0; i-- {
			clear(br)
			m.blockFFForward(i, br, br, y1) // FF(LN2(y1)), refilling block internals
			sub(p.Threads, y2, br)          // y2 ← x2
			m.blockFFBackward(i, d1, d2, y1)
			clear(br)
			m.blockMixerForward(i, br, br, y2) // mixer(LN1(x2))
			sub(p.Threads, y1, br)             // y1 ← x1
			m.blockMixerBackward(i, d2, d1, y2)
		}
	}
	// x1 = x2 = embeddings: their gradients add.
	addRows(p.Threads, d1, d1, d2)
	embeddingBackward(m.g.embed, m.g.pos, d1, m.tokens, p.B, p.T, c.DModel)
}

// sub sets dst −= a across at most threads threads.
func sub[F interface{ ~float32 | ~float64 }](threads int, dst, a []F) {
	if len(dst) != len(a) {
		panic(fmt.Sprintf("model: sub of %d and %d elements", len(dst), len(a)))
	}
	parallel.For(threads, len(a), 1<<14, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			dst[k] -= a[k]
		}
	})
}
