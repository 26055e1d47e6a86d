package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/lsh"
	"github.com/tokenmix/tokenmix/internal/model"
)

// A rule writes one mixer layer (its tensors under prefix p) applied to h
// [B,T,D] and returns its output [B,T,D].
type rule func(x *ctx, p, h string) (string, error)

// rules are the mixer kinds Export writes. A kind without one (including
// any kind added through registry.Add) is refused by name.
var rules = map[string]rule{
	"full":       full,
	"strided":    sparse,
	"fixed":      sparse,
	"topk":       topk,
	"entmax":     entmax,
	"aft_simple": aftSimple,
	"aft_full":   aftBanded,
	"aft_local":  aftBanded,
	"aft_conv":   aftConv,
	"fnet":       fnet,
	"lsh":        lshRule,
}

// Supported lists the kinds with an export rule.
func Supported() string {
	var ks []string
	for k := range rules {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return "the kinds exported: " + strings.Join(ks, ", ")
}

// masked is the large negative score of a disallowed key: softmax gives it
// exactly 0 next to any allowed key, and a row of nothing but such keys
// stays finite (its weights are then zeroed with Where).
const masked = -1e30

// full is exact softmax attention: per head softmax(q·kᵀ/√dh + bias) over
// the allowed keys, a query with none getting zeros, then o. RoPE rotates
// q and k by constant cos and sin tables of max_len rows; ALiBi adds
// −m_h·|i−j|.
func full(x *ctx, p, h string) (string, error) {
	return x.attention(p, h, "", func(s string) string { return x.g.Op("Softmax", []string{s}, AInt("axis", -1)) })
}

// attention is the attention kinds' layer: q, k, v, their scores (RoPE,
// ALiBi), disallowed keys at a large negative score (the causal, padding
// and pattern masks, pattern "" for none, broadcastable to [B,H,T,T]), the
// kind's row rule turning scores into weights, zeroed at disallowed keys,
// then o.
func (x *ctx) attention(p, h, pattern string, rowRule func(s string) string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	alibi := o.Bool("alibi", false)
	rope := o.Bool("rope", false)
	base := o.Float("rope_base", attn.DefaultRopeBase)
	H := c.NHeads
	dh := c.DModel / H
	q, k, v := x.heads(x.linear(h, p+"q"), H), x.heads(x.linear(h, p+"k"), H), x.heads(x.linear(h, p+"v"), H)
	if rope {
		q, k = x.rope(q, base, dh), x.rope(k, base, dh)
	}
	s := g.Op("Mul", []string{g.Op("MatMul", []string{q, g.Op("Transpose", []string{k}, AInts("perm", 0, 1, 3, 2))}), g.Scalar(float32(1 / math.Sqrt(float64(dh))))})
	if alibi {
		s = g.Op("Add", []string{s, x.alibi(H)})
	}
	a := x.allowed()
	switch {
	case pattern == "":
	case a == "":
		a = pattern
	default:
		a = g.Op("And", []string{a, pattern})
	}
	if a != "" {
		s = g.Op("Where", []string{a, s, g.Scalar(masked)})
	}
	pr := rowRule(s)
	if a != "" {
		pr = g.Op("Where", []string{a, pr, g.Scalar(0)})
	}
	return x.linear(x.merge(g.Op("MatMul", []string{pr, v})), p+"o"), nil
}

// sparse is the Sparse Transformer's strided and fixed attention as full
// attention under the pattern's mask (package sparse's index sets, every
// query with itself; combine "merge": A1 ∪ A2, "heads": the first half of
// the heads A1, the others A2, "interleave": even layers A1, odd A2). The
// mask is T×T: the file computes every score and keeps the allowed ones.
func sparse(x *ctx, p, h string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	l := int64(o.Int("block", 0))
	comb := o.String("combine", "merge")
	d := g.Op("Neg", []string{x.offsets()}) // i − j
	var a1, a2 string
	switch c.Mixer.Kind {
	case "strided":
		if c.Causal {
			a1 = g.Op("And", []string{g.Op("GreaterOrEqual", []string{d, g.IntScalar(0)}), g.Op("LessOrEqual", []string{d, g.IntScalar(l)})})
		} else {
			a1 = g.Op("LessOrEqual", []string{g.Op("Abs", []string{d}), g.IntScalar(l)})
		}
		a2 = g.Op("Equal", []string{g.Op("Mod", []string{d, g.IntScalar(l)}), g.IntScalar(0)})
	default: // fixed
		cs := int64(o.Int("summary", 0))
		pos := x.positions()
		blk := g.Op("Div", []string{pos, g.IntScalar(l)})
		a1 = g.Op("Equal", []string{g.Op("Unsqueeze", []string{blk, g.Ints(1)}), g.Op("Unsqueeze", []string{blk, g.Ints(0)})})
		sum := g.Op("GreaterOrEqual", []string{g.Op("Mod", []string{pos, g.IntScalar(l)}), g.IntScalar(l - cs)}) // [T] over j
		a2 = g.Op("Expand", []string{g.Op("Unsqueeze", []string{sum, g.Ints(0)}), g.Op("Concat", []string{x.T1, x.T1}, AInt("axis", 0))})
	}
	self := g.Op("Equal", []string{d, g.IntScalar(0)})
	a1, a2 = g.Op("Or", []string{a1, self}), g.Op("Or", []string{a2, self})
	var pat string
	switch comb {
	case "heads":
		H := c.NHeads
		first := make([]int64, H)
		for i := range H / 2 {
			first[i] = 1
		}
		isFirst := g.Op("Cast", []string{g.i64(g.name("first_heads"), []int64{int64(H), 1, 1}, first)}, AInt("to", Bool))
		// [H,T,T]; ONNX Runtime has no Where on bool values.
		pat = g.Op("Or", []string{g.Op("And", []string{isFirst, a1}), g.Op("And", []string{g.Op("Not", []string{isFirst}), a2})})
	case "interleave":
		pat = a1
		if layerOf(p)%2 == 1 {
			pat = a2
		}
	default:
		pat = g.Op("Or", []string{a1, a2})
	}
	if c.Causal {
		pat = g.Op("And", []string{pat, g.Op("GreaterOrEqual", []string{d, g.IntScalar(0)})})
	}
	return x.attention(p, h, pat, func(s string) string { return g.Op("Softmax", []string{s}, AInt("axis", -1)) })
}

// layerOf is the block index of a mixer prefix "blocks.{i}.mixer.".
func layerOf(p string) int {
	n := 0
	for _, r := range strings.TrimPrefix(p, "blocks.") {
		if r < '0' || r > '9' {
			break
		}
		n = 10*n + int(r-'0')
	}
	return n
}

// topk keeps, per query, the allowed keys whose score is at least the k-th
// largest (TopK over the row with k = min(k, T); ties keep more, as in Go),
// then softmax over them.
func topk(x *ctx, p, h string) (string, error) {
	g := x.g
	o := x.opts()
	k := int64(o.Int("k", 8))
	return x.attention(p, h, "", func(s string) string {
		kk := g.Op("Min", []string{g.Ints(k), x.T1})
		vals := g.OpN("TopK", []string{s, kk}, 2, AInt("axis", -1), AInt("largest", 1), AInt("sorted", 1))[0]
		theta := g.Op("ReduceMin", []string{vals}, AInts("axes", -1), AInt("keepdims", 1))
		kept := g.Op("Where", []string{g.Op("GreaterOrEqual", []string{s, theta}), s, g.Scalar(masked)})
		return g.Op("Softmax", []string{kept}, AInt("axis", -1))
	})
}

// entmaxSteps is the bisection's iterations: the bracket [β·max − 1,
// β·max − n^{−β}] is at most 1 wide, so 40 halvings leave 2^−40, below
// float32's resolution of τ.
const entmaxSteps = 40

// entmax is α-entmax attention: p_j = [β·s_j − τ]₊^{1/β}, β = α − 1, τ
// found by bisection on Σ_j p_j = 1 (unrolled, entmaxSteps), then p
// normalised by its sum. α is the option, or per head 1 + sigmoid(alpha_raw)
// with learn_alpha; α = 1 is softmax.
func entmax(x *ctx, p, h string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	alpha := o.Float("alpha", 1.5)
	learn := o.Bool("learn_alpha", false)
	if !learn && alpha == 1 {
		return full(x, p, h)
	}
	var beta string // [H,1,1] or a scalar
	if learn {
		beta = g.Op("Reshape", []string{g.Op("Sigmoid", []string{x.weight(p+"alpha_raw", false)}), g.Ints(int64(c.NHeads), 1, 1)})
	} else {
		beta = g.Scalar(float32(alpha - 1))
	}
	inv := g.Op("Reciprocal", []string{beta})
	return x.attention(p, h, "", func(s string) string {
		bz := g.Op("Mul", []string{s, beta}) // masked keys stay far below τ
		mx := g.Op("ReduceMax", []string{bz}, AInts("axes", -1), AInt("keepdims", 1))
		lo := g.Op("Sub", []string{mx, g.Scalar(1)})
		hi := mx
		mass := func(tau string) string {
			return g.Op("ReduceSum", []string{g.Op("Pow", []string{g.Op("Relu", []string{g.Op("Sub", []string{bz, tau})}), inv}), g.Ints(-1)}, AInt("keepdims", 1))
		}
		for range entmaxSteps {
			mid := g.Op("Mul", []string{g.Op("Add", []string{lo, hi}), g.Scalar(0.5)})
			above := g.Op("GreaterOrEqual", []string{mass(mid), g.Scalar(1)}) // τ ≥ mid
			lo = g.Op("Where", []string{above, mid, lo})
			hi = g.Op("Where", []string{above, hi, mid})
		}
		pr := g.Op("Pow", []string{g.Op("Relu", []string{g.Op("Sub", []string{bz, lo})}), inv})
		return g.Op("Div", []string{pr, g.Op("ReduceSum", []string{pr, g.Ints(-1)}, AInt("keepdims", 1))})
	})
}

// alibi is the bias −m_h·|i−j| [H,T,T], m_h = 2^(−8(h+1)/H).
func (x *ctx) alibi(H int) string {
	return x.once("alibi", func() string {
		g := x.g
		slopes := make([]float32, H)
		for h := range slopes {
			slopes[h] = -float32(math.Pow(2, -8*float64(h+1)/float64(H)))
		}
		dist := g.Op("Cast", []string{g.Op("Abs", []string{x.offsets()})}, AInt("to", Float))
		return g.Op("Mul", []string{g.Const([]int64{int64(H), 1, 1}, slopes), dist})
	})
}

// rope rotates v [B,H,T,dh] by RoPE ("rotate half"): lo' = lo·cos −
// hi·sin, hi' = hi·cos + lo·sin, with the angles p·base^(−2a/dh).
func (x *ctx) rope(v string, base float64, dh int) string {
	g := x.g
	cs := x.onceN("rope", func() []string {
		n, half := x.c.MaxLen, dh/2
		cos, sin := make([]float32, n*dh), make([]float32, n*dh)
		for a := range half {
			th := math.Pow(base, -2*float64(a)/float64(dh))
			for p := range n {
				s, c := math.Sincos(float64(p) * th)
				cos[p*dh+a], cos[p*dh+a+half] = float32(c), float32(c)
				sin[p*dh+a], sin[p*dh+a+half] = float32(-s), float32(s)
			}
		}
		dims := []int64{int64(n), int64(dh)}
		c := g.Op("Slice", []string{g.Const(dims, cos), g.Ints(0), x.T1, g.Ints(0)})
		s := g.Op("Slice", []string{g.Const(dims, sin), g.Ints(0), x.T1, g.Ints(0)})
		return []string{c, s}
	})
	c, s := cs[0], cs[1]
	half := int64(dh / 2)
	lo := g.Op("Slice", []string{v, g.Ints(0), g.Ints(half), g.Ints(3)})
	hi := g.Op("Slice", []string{v, g.Ints(half), g.Ints(int64(dh)), g.Ints(3)})
	swapped := g.Op("Concat", []string{hi, lo}, AInt("axis", 3)) // the sin table carries the sign
	return g.Op("Add", []string{g.Op("Mul", []string{v, c}), g.Op("Mul", []string{swapped, s})})
}

// expKeys returns E = exp(K − max K) over the allowed keys (0 at pad
// keys) and E⊙V, both [B,T,D], for the AFT kinds; the maximum is per
// channel over the sequence's non-pad positions.
func (x *ctx) expKeys(k, v string) (e, ev string) {
	g := x.g
	km := k
	var keep3 string
	if x.keep != "" {
		keep3 = g.Op("Unsqueeze", []string{x.keep, g.Ints(2)})
		km = g.Op("Where", []string{keep3, k, g.Scalar(masked)})
	}
	m := g.Op("ReduceMax", []string{km}, AInts("axes", 1), AInt("keepdims", 1))
	e = g.Op("Exp", []string{g.Op("Sub", []string{km, m})})
	if keep3 != "" {
		e = g.Op("Where", []string{keep3, e, g.Scalar(0)})
	}
	return e, g.Op("Mul", []string{e, v})
}

// ratio is σ(Q)⊙num/den through o, 0 where den = 0 (no allowed key).
func (x *ctx) ratio(p, h, num, den string) string {
	g := x.g
	r := g.Op("Div", []string{num, g.Op("Max", []string{den, g.Scalar(1e-30)})})
	q := g.Op("Sigmoid", []string{x.linear(h, p+"q")})
	return x.linear(g.Op("Mul", []string{q, r}), p+"o")
}

// aftSimple is AFT-simple: per channel a softmax of K over the allowed
// positions weighting V, as totals or, when causal, prefix sums (CumSum)
// relative to the sequence's maximum of K. Go's causal kernel rescales by
// a running maximum instead; the two agree unless a channel of K spans
// more than float32's exponent range (≈ 80) within a sequence.
func aftSimple(x *ctx, p, h string) (string, error) {
	g := x.g
	e, ev := x.expKeys(x.linear(h, p+"k"), x.linear(h, p+"v"))
	var num, den string
	if x.c.Causal {
		num = g.Op("CumSum", []string{ev, g.IntScalar(1)})
		den = g.Op("CumSum", []string{e, g.IntScalar(1)})
	} else {
		num = g.Op("ReduceSum", []string{ev, g.Ints(1)}, AInt("keepdims", 1))
		den = g.Op("ReduceSum", []string{e, g.Ints(1)}, AInt("keepdims", 1))
	}
	return x.ratio(p, h, num, den), nil
}

// aftBanded is AFT-full and AFT-local as T×T weights: A[b,t,t'] =
// exp(w[t,t'] − mw[b,t]) over the allowed t', so num = A·(E⊙V) and den =
// A·E. w is pos_bias[:T,:T], for aft_local inside |t−t'| < window; beyond
// the window w is 0, or the key is excluded with "distant": false.
func aftBanded(x *ctx, p, h string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	w := g.Op("Slice", []string{x.weight(p+"pos_bias", false), g.Ints(0, 0), g.Op("Concat", []string{x.T1, x.T1}, AInt("axis", 0)), g.Ints(0, 1)})
	var in string // aft_local: inside the window, bool [T,T]
	distant := true
	if c.Mixer.Kind == "aft_local" {
		distant = o.Bool("distant", true)
		in = g.Op("Less", []string{g.Op("Abs", []string{x.offsets()}), g.IntScalar(int64(o.Int("window", 32)))})
	}
	w = g.Op("Unsqueeze", []string{w, g.Ints(0)})
	allow := x.allowed()
	if in != "" {
		if distant {
			w = g.Op("Where", []string{in, w, g.Scalar(0)})
		} else if allow == "" {
			allow = in
		} else {
			allow = g.Op("And", []string{allow, in})
		}
	}
	if allow != "" {
		w = g.Op("Where", []string{allow, w, g.Scalar(masked)})
	}
	mw := g.Op("ReduceMax", []string{w}, AInts("axes", -1), AInt("keepdims", 1))
	a := g.Op("Exp", []string{g.Op("Sub", []string{w, mw})})
	if allow != "" {
		a = g.Op("Where", []string{allow, a, g.Scalar(0)})
	}
	e, ev := x.expKeys(x.linear(h, p+"k"), x.linear(h, p+"v"))
	num := x.merge(g.Op("MatMul", []string{a, x.heads(ev, 1)}))
	den := x.merge(g.Op("MatMul", []string{a, x.heads(e, 1)}))
	return x.ratio(p, h, num, den), nil
}

// aftConv is AFT-conv as depthwise convolutions over time (Conv, one group
// per channel, the head's taps reversed into a cross-correlation):
//
//	num[t] = c[t]·S[t] + Σ_o (e^{w_o − M} − c[t])·(E⊙V)[t − δ(o)],  den likewise with E,
//
// S the sums of every allowed key (totals, or prefix sums when causal),
// M the head's largest tap (or 0 if larger, when distant keys count),
// and c[t] = e^{−M} where row t has an allowed key beyond the
// window ("distant": true), else 0: Go's band formula with a per-head
// shift instead of a per-row one. The two agree unless a head's taps span
// more than float32's exponent range (≈ 80).
func aftConv(x *ctx, p, h string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	s := o.Int("window", 31)
	H := o.Int("heads", c.NHeads)
	distant := o.Bool("distant", true)
	D := c.DModel
	rel := x.weight(p+"rel_bias", false) // [H,s]
	mx := g.Op("ReduceMax", []string{rel}, AInts("axes", 1), AInt("keepdims", 1))
	if distant {
		mx = g.Op("Max", []string{mx, g.Scalar(0)})
	}
	band := g.Op("Exp", []string{g.Op("Sub", []string{rel, mx})}) // [H,s]
	// Per channel [D,1,s], taps reversed: Conv correlates, tap o reads t − δ(o).
	perChannel := func(k string) string {
		k = g.Op("Slice", []string{k, g.Ints(-1), g.Ints(math.MinInt64), g.Ints(1), g.Ints(-1)})
		k = g.Op("Expand", []string{g.Op("Unsqueeze", []string{k, g.Ints(1)}), g.Ints(int64(H), int64(D/H), int64(s))})
		return g.Op("Reshape", []string{k, g.Ints(int64(D), 1, int64(s))})
	}
	before := int64(s - 1) // causal: taps look back
	if !c.Causal {
		before = int64(s-1) / 2
	}
	conv := func(in, kern string, groups int) string { // in [B,T,C] → [B,T,C]
		t := g.Op("Transpose", []string{in}, AInts("perm", 0, 2, 1))
		y := g.Op("Conv", []string{t, kern}, AInt("group", int64(groups)), AInts("kernel_shape", int64(s)), AInts("pads", before, int64(s-1)-before))
		return g.Op("Transpose", []string{y}, AInts("perm", 0, 2, 1))
	}
	e, ev := x.expKeys(x.linear(h, p+"k"), x.linear(h, p+"v"))
	both := g.Op("Concat", []string{ev, e}, AInt("axis", 2)) // [B,T,2D]
	wBand := perChannel(band)
	kern2 := g.Op("Concat", []string{wBand, wBand}, AInt("axis", 0)) // [2D,1,s]
	out := conv(both, kern2, 2*D)
	if distant {
		cst := g.Op("Exp", []string{g.Op("Neg", []string{mx})}) // [H,1]
		wDist := perChannel(g.Op("Sub", []string{band, cst}))
		kd := g.Op("Concat", []string{wDist, wDist}, AInt("axis", 0))
		withC := conv(both, kd, 2*D)
		var sums string
		if c.Causal {
			sums = g.Op("CumSum", []string{both, g.IntScalar(1)})
		} else {
			sums = g.Op("ReduceSum", []string{both, g.Ints(1)}, AInt("keepdims", 1))
		}
		cD := g.Op("Reshape", []string{g.Op("Expand", []string{cst, g.Ints(int64(H), int64(D/H))}), g.Ints(1, 1, int64(D))})
		cD = g.Op("Concat", []string{cD, cD}, AInt("axis", 2))
		withC = g.Op("Add", []string{withC, g.Op("Mul", []string{cD, sums})})
		// Rows with an allowed key beyond the window: all allowed keys
		// (prefix, or total) against those within it (a convolution of
		// ones), counted exactly in float.
		keep := g.Op("Unsqueeze", []string{g.Op("ConstantOfShape", []string{g.Op("Shape", []string{x.tok})}, AFloatTensor("value", 1)), g.Ints(2)})
		if x.keep != "" {
			keep = x.keepF()
		}
		var all string
		if c.Causal {
			all = g.Op("CumSum", []string{keep, g.IntScalar(1)})
		} else {
			all = g.Op("ReduceSum", []string{keep, g.Ints(1)}, AInt("keepdims", 1))
		}
		ones := make([]float32, s)
		for i := range ones {
			ones[i] = 1
		}
		near := conv(keep, g.Const([]int64{1, 1, int64(s)}, ones), 1)
		far := g.Op("Greater", []string{g.Op("Sub", []string{all, near}), g.Scalar(0.5)}) // [B,T,1]
		out = g.Op("Where", []string{far, withC, out})
	}
	num := g.Op("Slice", []string{out, g.Ints(0), g.Ints(int64(D)), g.Ints(2)})
	den := g.Op("Slice", []string{out, g.Ints(int64(D)), g.Ints(int64(2 * D)), g.Ints(2)})
	return x.ratio(p, h, num, den), nil
}

// fnet is FNet's Re(FFT_seq(FFT_hidden(x))) = C_T·x·C_D − S_T·x·S_D as
// DFT-matrix products: C_D and S_D are constants; C_T and S_T are built in
// the graph from the length (angles 2π·(j·k mod T)/T), so the sequence
// axis stays dynamic. The DFT operator would need a complex layout and
// two transforms; four matrix products are what ONNX Runtime runs
// fastest at these sizes.
func fnet(x *ctx, _, h string) (string, error) {
	g, D := x.g, x.c.DModel
	cd, sd := make([]float32, D*D), make([]float32, D*D)
	for j := range D {
		for k := range D {
			s, c := math.Sincos(2 * math.Pi * float64(j*k%D) / float64(D))
			cd[j*D+k], sd[j*D+k] = float32(c), float32(s)
		}
	}
	dims := []int64{int64(D), int64(D)}
	cD, sD := g.Const(dims, cd), g.Const(dims, sd)
	ct := x.onceN("fnet_t", func() []string {
		pos := x.positions()
		jk := g.Op("Mod", []string{g.Op("Mul", []string{g.Op("Unsqueeze", []string{pos, g.Ints(1)}), g.Op("Unsqueeze", []string{pos, g.Ints(0)})}), x.T})
		step := g.Op("Div", []string{g.Scalar(2 * math.Pi), g.Op("Cast", []string{x.T}, AInt("to", Float))})
		ang := g.Op("Mul", []string{g.Op("Cast", []string{jk}, AInt("to", Float)), step})
		return []string{g.Op("Cos", []string{ang}), g.Op("Sin", []string{ang})}
	})
	cT, sT := ct[0], ct[1]
	a := g.Op("MatMul", []string{cT, g.Op("MatMul", []string{h, cD})})
	b := g.Op("MatMul", []string{sT, g.Op("MatMul", []string{h, sD})})
	return g.Op("Sub", []string{a, b}), nil
}

// lshRule is Reformer's LSH attention as full attention (shared qk,
// unit-length keys) under the mask of the union of its windows, which is
// what the kernel's duplicate-corrected rounds compute. Per round r and
// head h the buckets are ArgMax([s·R; −s·R]) with the rotation R the
// kernel draws from the model's pass seed (PassSeed(train.seed, step,
// layer), as tokenmix.Load sets it); the rotations of every bucket count
// up to max_len are constants, and the length picks one (Gather, Slice).
// A token's chunk is its rank among its bucket's non-pad tokens (earlier
// positions) divided by bucket_size; a query sees its chunk and the
// previous one of its bucket (the bucket's last, bidirectionally, from its
// first chunk), never a later key when causal, and itself only when
// nothing else.
func lshRule(x *ctx, p, h string) (string, error) {
	g, c := x.g, x.c
	o := x.opts()
	bs := int64(o.Int("bucket_size", lsh.DefaultBucketSize))
	R := o.Int("n_hashes", lsh.DefaultNHashes)
	rope := o.Bool("rope", false)
	base := o.Float("rope_base", attn.DefaultRopeBase)
	H, layer := c.NHeads, layerOf(p)
	dh := c.DModel / H
	mx, ok := x.m.Mixer(layer).(*lsh.LSH[float32])
	if !ok {
		return "", fmt.Errorf("onnx: block %d's mixer is not lsh", layer)
	}
	s := x.heads(x.linear(h, p+"qk"), H) // [B,H,T,dh]
	if rope {
		s = x.rope(s, base, dh)
	}
	v := x.heads(x.linear(h, p+"v"), H)
	norm := g.Op("ReduceL2", []string{s}, AInts("axes", -1), AInt("keepdims", 1))
	key := g.Op("Div", []string{s, g.Op("Max", []string{norm, g.Scalar(1e-30)})})
	z := g.Op("Mul", []string{g.Op("MatMul", []string{s, g.Op("Transpose", []string{key}, AInts("perm", 0, 1, 3, 2))}), g.Scalar(float32(1 / math.Sqrt(float64(dh))))})

	// Rotations [NBmax/2 bucket counts, R, H, dh, NBmax/2], zero-padded.
	maxHalf := max(1, c.MaxLen/(2*int(bs)))
	rot := make([]float32, maxHalf*R*H*dh*maxHalf)
	seed := model.PassSeed(x.m.Seed, x.m.Step, layer)
	tmp := make([]float32, dh*maxHalf)
	for n := 1; n <= maxHalf; n++ {
		for r := range R {
			for hh := range H {
				mx.Rotation(tmp, seed, r, hh, 2*n)
				for a := range dh {
					off := ((((n-1)*R+r)*H+hh)*dh + a) * maxHalf
					copy(rot[off:off+n], tmp[a*n:(a+1)*n])
				}
			}
		}
	}
	rotT := g.Const([]int64{int64(maxHalf), int64(R), int64(H), int64(dh), int64(maxHalf)}, rot)
	half := g.Op("Max", []string{g.Op("Div", []string{x.T, g.IntScalar(2 * bs)}), g.IntScalar(1)}) // NB/2
	sel := g.Op("Gather", []string{rotT, g.Op("Sub", []string{half, g.IntScalar(1)})}, AInt("axis", 0))
	sel = g.Op("Slice", []string{sel, g.Ints(0), g.Op("Unsqueeze", []string{half, g.Ints(0)}), g.Ints(3)}) // [R,H,dh,NB/2]
	proj := g.Op("MatMul", []string{g.Op("Unsqueeze", []string{s, g.Ints(1)}), sel})                       // [B,R,H,T,NB/2]
	bucket := g.Op("ArgMax", []string{g.Op("Concat", []string{proj, g.Op("Neg", []string{proj})}, AInt("axis", -1))},
		AInt("axis", -1), AInt("keepdims", 0), AInt("select_last_index", 0)) // [B,R,H,T]

	// Same bucket, key not pad: [B,R,H,T,T].
	same := g.Op("Equal", []string{g.Op("Unsqueeze", []string{bucket, g.Ints(-1)}), g.Op("Unsqueeze", []string{bucket, g.Ints(-2)})})
	var keepQ string // [B,1,1,T,1], queries that are not pad
	if x.keep != "" {
		same = g.Op("And", []string{same, g.Op("Unsqueeze", []string{x.keep, g.Ints(1, 2, 3)})})
		keepQ = g.Op("Unsqueeze", []string{x.keep, g.Ints(1, 2, 4)})
	}
	d := g.Op("Neg", []string{x.offsets()}) // i − j
	earlier := g.Op("Greater", []string{d, g.IntScalar(0)})
	sameF := g.Op("Cast", []string{same}, AInt("to", Float))
	rank := g.Op("ReduceSum", []string{g.Op("Mul", []string{sameF, g.Op("Cast", []string{earlier}, AInt("to", Float))}), g.Ints(-1)}, AInt("keepdims", 0))
	chunk := g.Op("Floor", []string{g.Op("Div", []string{rank, g.Scalar(float32(bs))})}) // [B,R,H,T]
	ci := g.Op("Unsqueeze", []string{chunk, g.Ints(-1)})
	cj := g.Op("Unsqueeze", []string{chunk, g.Ints(-2)})
	win := g.Op("Or", []string{g.Op("Equal", []string{cj, ci}), g.Op("Equal", []string{cj, g.Op("Sub", []string{ci, g.Scalar(1)})})})
	if !c.Causal {
		count := g.Op("ReduceSum", []string{sameF, g.Ints(-1)}, AInt("keepdims", 1)) // the query's bucket size
		last := g.Op("Floor", []string{g.Op("Div", []string{g.Op("Sub", []string{count, g.Scalar(1)}), g.Scalar(float32(bs))})})
		wrap := g.Op("And", []string{g.Op("Equal", []string{ci, g.Scalar(0)}), g.Op("Equal", []string{cj, last})})
		win = g.Op("Or", []string{win, wrap})
	}
	win = g.Op("And", []string{same, win})
	if keepQ != "" {
		win = g.Op("And", []string{win, keepQ})
	}
	// The union over the rounds, [B,H,T,T].
	any := g.Op("Greater", []string{g.Op("ReduceMax", []string{g.Op("Cast", []string{win}, AInt("to", Float))}, AInts("axes", 1), AInt("keepdims", 0)), g.Scalar(0)})
	if c.Causal {
		any = g.Op("And", []string{any, g.Op("GreaterOrEqual", []string{d, g.IntScalar(0)})})
	}
	self := g.Op("Equal", []string{d, g.IntScalar(0)})
	others := g.Op("And", []string{any, g.Op("Not", []string{self})})
	has := g.Op("Greater", []string{g.Op("ReduceMax", []string{g.Op("Cast", []string{others}, AInt("to", Float))}, AInts("axes", -1), AInt("keepdims", 1)), g.Scalar(0)})
	alone := g.Op("And", []string{self, g.Op("Not", []string{has})})
	if x.keep != "" {
		alone = g.Op("And", []string{alone, g.Op("Unsqueeze", []string{x.keep, g.Ints(1, 3)})})
	}
	allow := g.Op("Or", []string{others, alone})
	z = g.Op("Where", []string{allow, z, g.Scalar(masked)})
	pr := g.Op("Where", []string{allow, g.Op("Softmax", []string{z}, AInt("axis", -1)), g.Scalar(0)})
	return x.linear(x.merge(g.Op("MatMul", []string{pr, v})), p+"o"), nil
}
