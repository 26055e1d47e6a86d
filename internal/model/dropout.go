package model

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Dropout (config "dropout" = p) zeroes elements of each block's two branch
// outputs in training and scales the others by 1/(1−p). The mask is not
// stored: it is a counter-based function of (seed, step, layer, branch,
// element), so backward, checkpoint recomputation and the reconstruction
// of reversible blocks all see the same mask as forward. The words are
// drawn as the LSH rotations' are, from streams of their own
// (docs/model.md, "Dropout"):
//
//	key  = splitmix(splitmix(PassSeed(seed, step, layer)) XOR (2⁶³ | branch))
//	w_n  = splitmix(key + n)                  branch 0 = mixer, 1 = feed-forward
//	drop element j of the [B,T,D] output  ⇔  16-bit lane j mod 4 of w_{⌊j/4⌋} < round(p·2¹⁶)

// dropStream marks the dropout streams (LSH streams never set bit 63).
const dropStream = 1 << 63

// dropKey is the key of block layer's branch mask at the model's step.
func (m *Model[F]) dropKey(layer, branch int) uint64 {
	return mixer.SplitMix(mixer.SplitMix(PassSeed(m.Seed, m.Step, layer)) ^ (dropStream | uint64(branch)))
}

// dropThreshold is round(p·2¹⁶): a 16-bit lane below it drops its element.
func dropThreshold(p float64) uint64 { return uint64(math.Round(p * (1 << 16))) }

// drop sets dst = src·mask/(1−p) with block layer's branch mask (dst may
// be src). A dropped element is multiplied by 0, so a non-finite one stays
// non-finite for the step's check. The select is branch-free: a lane
// below the threshold wraps lane − thresh, whose top bit picks factor 0.
func (m *Model[F]) drop(dst, src []F, layer, branch int) {
	p := m.Config.Dropout
	thresh, key := dropThreshold(p), m.dropKey(layer, branch)
	factor := [2]F{F(1 / (1 - p)), 0}
	words := (len(src) + 3) / 4
	parallel.For(m.plan.Threads, words, 1<<12, func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			w := mixer.SplitMix(key + uint64(n))
			for j := 4 * n; j < min(4*n+4, len(src)); j++ {
				dst[j] = src[j] * factor[(w&0xffff-thresh)>>63]
				w >>= 16
			}
		}
	})
}

// dropGrad returns the gradient of block layer's branch output given dout,
// the gradient of the dropped output: dout through the same mask, in the
// gradient slab's ddrop.
func (m *Model[F]) dropGrad(dout []F, layer, branch int) []F {
	d := m.grad(m.plan.ddrop)
	m.drop(d, dout, layer, branch)
	return d
}
