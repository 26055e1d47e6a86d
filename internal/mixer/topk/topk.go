package topk

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// DefaultK is the k of the paper's recommendation.
const DefaultK = 8

// Kinds returns the package's registry entries: top-k attention ("topk"),
// with option k (int ≥ 1, default 8).
func Kinds() []mixer.Kind {
	return []mixer.Kind{{
		Name:          "topk",
		Causal:        true,
		Bidirectional: true,
		KeyPadding:    true,
		PadInvariant:  true,
		Decode:        true,
		Paper:         "Zhao et al. 2019, Explicit Sparse Transformer: Concentrated Attention Through Explicit Selection",
		New32:         func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64:         func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests:         tests(),
	}}
}

// Attention is top-k attention. It implements mixer.Mixer and mixer.Stats.
type Attention[F kernels.Float] struct {
	*attn.RuleAttention[F]
	K int
}

// New returns a top-k mixer for cfg, or an error naming the first invalid
// option or size.
func New[F kernels.Float](cfg mixer.Config) (*Attention[F], error) {
	k := cfg.Opts.Int("k", DefaultK)
	rope := attn.RopeOption(&cfg.Opts, cfg.D, cfg.Heads, false)
	if err := cfg.Opts.Err(); err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("mixer.k: must be ≥ 1, got %d", k)
	}
	// Ties at the k-th value keep more than k entries; a block whose rows
	// keep more than 2k on average falls back to dense mode. A k beyond
	// max_len keeps every key, and plans for no more.
	a, err := attn.NewRuleAttention[F](cfg, rule[F]{k: k}, 2*min(k, max(cfg.MaxLen, 1)))
	if err != nil {
		return nil, err
	}
	a.KeepScoresFP32()
	a.Rope = rope
	return &Attention[F]{RuleAttention: a, K: k}, nil
}

// Stats reports "zeros/h{h}", the mean fraction of exact zeros among the
// allowed keys of a query row of head h in the last Forward.
func (m *Attention[F]) Stats() map[string]float64 {
	s := map[string]float64{}
	for h, z := range m.ZeroFrac() {
		s[fmt.Sprintf("zeros/h%d", h)] = z
	}
	return s
}

// rule is the top-k softmax Rule. Its row statistics are the k-th largest
// allowed score θ (−Inf when at most k keys are allowed) and the
// log-sum-exp L over the kept entries: p_j = exp(z_j − L) if z_j ≥ θ.
type rule[F kernels.Float] struct{ k int }

func (r rule[F]) Normalize(z, tmp []F, h int) ([2]F, int) {
	th, lse, n := Row(z, tmp, r.k)
	return [2]F{F(th), F(lse)}, n
}

func (r rule[F]) Recompute(z []F, h int, st [2]F) {
	apply(z, float64(st[0]), float64(st[1]))
}

func (r rule[F]) Backward(dp, p []F, h int, clobber bool) float64 {
	// Softmax backward over the kept entries: dz = p ⊙ (dp − Σ p·dp).
	p = p[:len(dp)]
	var s float64
	for j, pj := range p {
		s += float64(pj) * float64(dp[j])
	}
	for j, pj := range p {
		dp[j] = F(float64(pj) * (float64(dp[j]) - s))
	}
	return 0
}

// Row replaces the scores z (−Inf = disallowed) by the softmax over their
// k largest allowed entries (all entries equal to the k-th largest are
// kept; all allowed entries when at most k are), zeros elsewhere. It
// returns the threshold θ, the log-sum-exp L of the kept entries (θ = L =
// +Inf and all zeros when no entry is allowed) and the number kept. tmp is
// workspace of len(z). Row panics if k < 1 or len(tmp) < len(z).
func Row[F kernels.Float](z, tmp []F, k int) (theta, lse float64, kept int) {
	if k < 1 {
		panic("topk: k < 1")
	}
	tmp = tmp[:len(z)]
	ninf := F(math.Inf(-1))
	var th, mx F
	if k <= heapMaxK && k <= len(z) {
		var full bool
		th, mx, full = kthLargestHeap(z, tmp[:k])
		if !full { // at most k allowed: keep them all
			th = ninf
		}
	} else {
		c := tmp[:0]
		mx = ninf
		for _, v := range z {
			if v > ninf {
				c = append(c, v)
				mx = max(mx, v)
			}
		}
		th = ninf
		if len(c) > k {
			th = KthLargest(c, k)
		}
	}
	if mx == ninf {
		clear(z)
		return math.Inf(1), math.Inf(1), 0
	}
	// Disallowed entries are −Inf and never kept.
	keep := th
	if keep == ninf {
		keep = -F(math.MaxFloat32)
	}
	// One pass: exp of the kept entries (relative to the maximum), zeros
	// elsewhere, kept indices into tmp; then scale the kept ones.
	idx := tmp[:0]
	var s float64
	fm := float64(mx)
	for j, v := range z {
		if v >= keep {
			e := math.Exp(float64(v) - fm)
			s += e
			z[j] = F(e)
			idx = append(idx, F(j))
		} else {
			z[j] = 0
		}
	}
	inv := 1 / s
	for _, jf := range idx {
		j := int(jf)
		z[j] = F(float64(z[j]) * inv)
	}
	return float64(th), fm + math.Log(s), len(idx)
}

// apply writes p_j = exp(z_j − lse) for allowed z_j ≥ θ, else 0.
func apply[F kernels.Float](z []F, theta, lse float64) {
	ninf := F(math.Inf(-1))
	for j, v := range z {
		if fv := float64(v); v > ninf && fv >= theta {
			z[j] = F(math.Exp(fv - lse))
		} else {
			z[j] = 0
		}
	}
}
