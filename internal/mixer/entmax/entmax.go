package entmax

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// SupportCap is C for entmax: the support entries per query row that act
// plans for. Row blocks whose mean support is larger run in dense mode.
const SupportCap = 64

// Kinds returns the package's registry entries: α-entmax attention
// ("entmax"), with options alpha (float ≥ 1, default 1.5) and learn_alpha
// (bool, default false; then 1 < alpha < 2).
func Kinds() []mixer.Kind {
	return []mixer.Kind{{
		Name:          "entmax",
		Causal:        true,
		Bidirectional: true,
		KeyPadding:    true,
		PadInvariant:  true,
		Decode:        true,
		Paper:         "Correia, Niculae, Martins 2019, Adaptively Sparse Transformers (EMNLP)",
		New32:         func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64:         func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests:         tests(),
	}}
}

// Options are the validated options of an entmax mixer.
type Options struct {
	Alpha float64 // α ≥ 1; the initial α when Learn
	Learn bool    // learn α per head, α_h = 1 + sigmoid(alpha_raw_h)
	// Rope is options "rope" and "rope_base": rotary embeddings of q and k
	// (attn.Rope), nil without them.
	Rope *attn.Rope
}

// ParseOptions reads and validates alpha, learn_alpha, rope and rope_base
// from o for d channels in heads heads, rejecting unknown keys.
func ParseOptions(o mixer.Options, d, heads int) (Options, error) {
	op := Options{Alpha: o.Float("alpha", 1.5), Learn: o.Bool("learn_alpha", false), Rope: attn.RopeOption(&o, d, heads, false)}
	if err := o.Err(); err != nil {
		return op, err
	}
	switch {
	case math.IsNaN(op.Alpha) || op.Alpha < 1:
		return op, fmt.Errorf("mixer.alpha: must be ≥ 1, got %v", op.Alpha)
	case op.Learn && !(op.Alpha > 1 && op.Alpha < 2):
		return op, fmt.Errorf("mixer.alpha: with learn_alpha it must lie strictly in (1, 2), got %v", op.Alpha)
	}
	return op, nil
}

// Attention is α-entmax attention. It implements mixer.Mixer and mixer.Stats.
type Attention[F kernels.Float] struct {
	*attn.RuleAttention[F]
	opt    Options
	rule   *rule[F]
	wa, ga []F // alpha_raw [H] and its gradient, when learned
	dalpha []float64
}

// New returns an entmax mixer for cfg, or an error naming the first invalid
// option or size.
func New[F kernels.Float](cfg mixer.Config) (*Attention[F], error) {
	opt, err := ParseOptions(cfg.Opts, cfg.D, cfg.Heads)
	if err != nil {
		return nil, err
	}
	r := &rule[F]{alpha: make([]float64, cfg.Heads), mt: make([]Method, cfg.Heads), learned: opt.Learn}
	a, err := attn.NewRuleAttention[F](cfg, r, SupportCap)
	if err != nil {
		return nil, err
	}
	a.Rope = opt.Rope
	m := &Attention[F]{RuleAttention: a, opt: opt, rule: r, dalpha: make([]float64, cfg.Heads)}
	m.setAlpha()
	return m, nil
}

// Params lists q, k, v, o and, with learn_alpha, alpha_raw [H] initialised
// to logit(alpha − 1) so that α starts at the configured value.
func (m *Attention[F]) Params() []mixer.ParamSpec {
	ps := m.RuleAttention.Params()
	if m.opt.Learn {
		a := m.opt.Alpha - 1
		ps = append(ps, mixer.ParamSpec{Name: "alpha_raw", Shape: []int{m.H}, Init: mixer.InitConst,
			Value: math.Log(a / (1 - a)), NoDecay: true})
	}
	return ps
}

// Bind takes the storage of every tensor of Params, in order.
func (m *Attention[F]) Bind(w, g [][]F) {
	m.RuleAttention.Bind(w, g)
	if m.opt.Learn {
		m.wa, m.ga = w[8], g[8]
	}
}

// Alpha returns α_h of every head (1 + sigmoid(alpha_raw_h) when learned).
func (m *Attention[F]) Alpha() []float64 {
	m.setAlpha()
	return append([]float64(nil), m.rule.alpha...)
}

func (m *Attention[F]) setAlpha() {
	for h := range m.rule.alpha {
		a := m.opt.Alpha
		if m.opt.Learn && m.wa != nil {
			a = 1 + sigmoid(float64(m.wa[h]))
		}
		m.rule.alpha[h] = a
		m.rule.mt[h] = MethodFor(a, m.opt.Learn)
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Forward is Attention.Forward with α-entmax rows.
// Decode implements mixer.Decoder with the current α (learned or not).
func (m *Attention[F]) Decode(out, x []F, st mixer.State, n, threads int) error {
	m.setAlpha()
	return m.RuleAttention.Decode(out, x, st, n, threads)
}

func (m *Attention[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	m.setAlpha()
	m.RuleAttention.Forward(out, act, scratch, x, p)
}

// Backward is Attention.Backward; with learn_alpha it also accumulates
// ∂L/∂alpha_raw_h = ∂L/∂α_h · σ'(alpha_raw_h), σ' = (α_h−1)(2−α_h).
func (m *Attention[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	m.setAlpha()
	if !m.opt.Learn {
		m.RuleAttention.Backward(dx, scratch, dout, act, x, p)
		return
	}
	clear(m.dalpha)
	m.BackwardAlpha(dx, scratch, dout, act, x, p, m.dalpha)
	for h, d := range m.dalpha {
		a := m.rule.alpha[h]
		m.ga[h] += F(d * (a - 1) * (2 - a))
	}
}

// AttentionWeights is Attention.AttentionWeights with the current α.
func (m *Attention[F]) AttentionWeights(x []float64, T int) [][]float64 {
	m.setAlpha()
	return m.RuleAttention.AttentionWeights(x, T)
}

// Stats reports "zeros/h{h}", the mean fraction of exact zeros per query
// row of head h in the last Forward, and with learn_alpha "alpha/h{h}".
func (m *Attention[F]) Stats() map[string]float64 {
	s := map[string]float64{}
	for h, z := range m.ZeroFrac() {
		s[fmt.Sprintf("zeros/h%d", h)] = z
	}
	if m.opt.Learn {
		for h, a := range m.Alpha() {
			s[fmt.Sprintf("alpha/h%d", h)] = a
		}
	}
	return s
}

// rule is the α-entmax Rule with one α per head.
type rule[F kernels.Float] struct {
	alpha   []float64
	mt      []Method
	learned bool
}

func (r *rule[F]) Normalize(z, tmp []F, h int) ([2]F, int) {
	tau, c, n := Row(z, tmp, r.alpha[h], r.mt[h])
	return [2]F{F(tau), F(c)}, n
}

func (r *rule[F]) Recompute(z []F, h int, st [2]F) {
	applyRow(z, z, r.alpha[h], r.mt[h], float64(st[0]), float64(st[1]), false)
}

func (r *rule[F]) Backward(dp, p []F, h int, clobber bool) float64 {
	switch {
	case clobber && r.mt[h] == Entmax15:
		rowBackward15(dp, p)
		return 0
	case clobber && r.mt[h] == Bisect:
		return rowBackwardGeneral(dp, p, r.alpha[h], r.learned, true)
	}
	return RowBackward(dp, p, r.alpha[h], r.mt[h], r.learned)
}
