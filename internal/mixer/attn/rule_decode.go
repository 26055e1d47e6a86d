package attn

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// StateBytes implements mixer.StateSizer.
func (a *RuleAttention[F]) StateBytes(maxLen, n int) int64 { return kvBytes[F](a.D, maxLen, n) }

// NewState returns an empty key–value cache for a causal sequence of at
// most maxLen positions (keys and values as rows, per head).
func (a *RuleAttention[F]) NewState(maxLen int, _ uint64) mixer.State {
	return &kvState[F]{max: maxLen, k: make([][]F, a.H), v: make([][]F, a.H), vt: make([][]F, a.H)}
}

// Decode implements mixer.Decoder for causal attention under the layer's
// Rule: position t scores every cached key, the rule (α-entmax, top-k)
// turns the row into probabilities, and y = Σ p_j·v_j over its support.
// O(t·D) per position.
func (a *RuleAttention[F]) Decode(out, x []F, st mixer.State, n, threads int) error {
	states, err := mixer.RepeatState(st, n, func(s *kvState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, states, threads)
}

// DecodeBatch implements mixer.BatchDecoder: one next position for each of
// several sequences, with the projections over all of them at once.
func (a *RuleAttention[F]) DecodeBatch(out, x []F, states []mixer.State, threads int) error {
	ss, err := mixer.BatchStates(states, func(s *kvState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, ss, threads)
}

func (a *RuleAttention[F]) decodeRows(out, x []F, states []*kvState[F], threads int) error {
	if !a.Causal {
		return fmt.Errorf("attn: decoding needs a causal mixer")
	}
	decodeRows(out, x, states, a.H, &a.proj, a.Rope, a.decodeHead, false, threads)
	return nil
}

// decodeHead writes head h's output o [Dh] for query q [Dh] at position i:
// the scores of keys 0..i, the rule's probabilities, and their weighted
// sum of the values on the support.
func (a *RuleAttention[F]) decodeHead(o, q []F, s *kvState[F], i, h int, hs *headScratch[F]) {
	Dh := a.Dh
	hs.sc, hs.tmp = grow(hs.sc, i+1), grow(hs.tmp, i+1)
	z, vh := hs.sc, s.v[h]
	kernels.Gemm(1, kernels.PrecFP32, false, true, 1, i+1, Dh, F(1/math.Sqrt(float64(Dh))), q, Dh, s.k[h], Dh, 0, z, i+1)
	a.rule.Normalize(z, hs.tmp, h)
	clear(o)
	for j, p := range z {
		if p != 0 {
			kernels.Axpy(o, p, vh[j*Dh:(j+1)*Dh])
		}
	}
}
