package mixertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// Case is one configuration to check.
type Case struct {
	Name string
	Cfg  mixer.Config
	B, T int
	// Pad, when true, marks some key positions of every sequence as padding
	// (only for kinds with KeyPadding): the tail (b+1 positions for sequence
	// b), one inner position, and, when B ≥ 2, position 0 of the last
	// sequence, so that a causal query there has no allowed key. Run then
	// also runs the whole suite on a second layout in which sequence 0 is
	// entirely padding (every query of it has no allowed key).
	Pad bool
	// Tol is the finite-difference tolerance on the relative error
	// |fd−analytic| / max(1, max|analytic|) per tensor; 0 means 1e-6.
	Tol float64
	// Setup, if set, may overwrite the random parameters and input (float64)
	// before the checks, e.g. to keep top-k or entmax supports away from
	// ties so that finite differences do not cross a kink.
	Setup func(w [][]float64, x []float64)
	// Samples is the number of entries per tensor checked by finite
	// differences; 0 means 24.
	Samples int
}

// Run runs the conformance suite for kind k on every case. A case with Pad
// runs twice: with the padding layout described at Case.Pad, and with
// sequence 0 fully padded (subtest suffix "/allpad").
func Run(t *testing.T, k mixer.Kind, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", k.Name, c.Name), func(t *testing.T) { runCase(t, k, c, false) })
		if c.Pad {
			t.Run(fmt.Sprintf("%s/%s/allpad", k.Name, c.Name), func(t *testing.T) { runCase(t, k, c, true) })
		}
	}
}

// Cases converts a kind's declared tests (mixer.Kind.Tests) into cases.
func Cases(k mixer.Kind) []Case {
	var out []Case
	for _, tc := range k.Tests {
		out = append(out, Case{Name: tc.Name, Cfg: tc.Config(k.Name), B: tc.B, T: tc.T, Pad: tc.Pad,
			Tol: tc.Tol, Setup: tc.Setup, Samples: tc.Samples})
	}
	return out
}

// RunKind runs the suite on every test case kind k declares, and checks
// that they cover each masking mode the kind supports, and padding when it
// has KeyPadding. A kind without tests fails.
func RunKind(t *testing.T, k mixer.Kind) {
	t.Helper()
	var causal, bidir, pad bool
	for _, tc := range k.Tests {
		causal = causal || tc.Causal
		bidir = bidir || !tc.Causal
		pad = pad || tc.Pad
		if tc.Causal && !k.Causal || !tc.Causal && !k.Bidirectional || tc.Pad && !k.KeyPadding {
			t.Errorf("%s: test %s uses a capability the kind does not declare", k.Name, tc.Name)
		}
	}
	switch {
	case len(k.Tests) == 0:
		t.Errorf("%s: no test cases: declare them in Kind.Tests", k.Name)
	case k.Causal && !causal, k.Bidirectional && !bidir:
		t.Errorf("%s: the test cases do not cover every masking mode the kind supports", k.Name)
	case k.KeyPadding && !pad:
		t.Errorf("%s: the kind honours key padding but no test case pads", k.Name)
	}
	Run(t, k, Cases(k))
	if k.Decode {
		n := 0
		for _, c := range Cases(k) {
			if c.Cfg.Causal && !c.Pad {
				n++
				t.Run(fmt.Sprintf("%s/%s/decode", k.Name, c.Name), func(t *testing.T) { Decode(t, k, c, 1e-12) })
			}
		}
		if n == 0 {
			t.Errorf("%s sets Decode but declares no causal case without padding to check it on", k.Name)
		}
	}
}

// Decode checks a causal case of a kind with Decode: feeding each sequence
// position by position, in uneven chunks (2, 3, 4, … positions), and as a
// prompt of ⌈T/2⌉ positions followed by single ones, gives the outputs of
// Forward on the whole batch within per-tensor max|a−b|/max|b| ≤ tol, and
// the state reports every position.
func Decode(t *testing.T, k mixer.Kind, c Case, tol float64) {
	t.Helper()
	in := build(t, k, c, false)
	dec, ok := in.m.(mixer.Decoder[float64])
	if !ok {
		t.Fatalf("%s sets Decode but its mixer does not implement mixer.Decoder", k.Name)
	}
	want := in.forward(in.x)
	D, T := c.Cfg.D, c.T
	for _, mode := range []string{"one by one", "chunks", "prompt"} {
		got := make([]float64, len(want))
		for b := range c.B {
			st := dec.NewState(T, in.p.Seed)
			for pos, n := 0, 1; pos < T; pos += n {
				switch {
				case mode == "chunks":
					n = min(n+1, T-pos)
				case mode == "prompt" && pos == 0:
					n = (T + 1) / 2
				default:
					n = 1
				}
				rows := in.x[(b*T+pos)*D : (b*T+pos+n)*D]
				if err := dec.Decode(got[(b*T+pos)*D:(b*T+pos+n)*D], rows, st, n, in.p.Threads); err != nil {
					t.Fatal(err)
				}
				if st.Len() != pos+n {
					t.Fatalf("state length %d after %d positions", st.Len(), pos+n)
				}
			}
			if err := dec.Decode(make([]float64, D), in.x[:D], st, 1, in.p.Threads); err == nil {
				t.Errorf("decoding past the state's max length: no error")
			}
		}
		var d, m float64
		for i := range want {
			d = math.Max(d, math.Abs(got[i]-want[i]))
			m = math.Max(m, math.Abs(want[i]))
		}
		if d > tol*m {
			t.Errorf("decoding (%s) differs from forward by %.3g (relative %.3g > %g)", mode, d, d/m, tol)
		}
	}
}

type inst struct {
	m      mixer.Mixer[float64]
	specs  []mixer.ParamSpec
	w, g   [][]float64
	x      []float64
	p      mixer.Pass
	act    []float64
	scr    []float64
	n      int // B*T*D
	causal bool
}

// build makes an instance of case c. With allPad (and c.Pad) sequence 0 is
// padded entirely.
func build(t *testing.T, k mixer.Kind, c Case, allPad bool) *inst {
	t.Helper()
	if c.Cfg.Causal && !k.Causal {
		t.Fatalf("case is causal but kind %s does not support causal", k.Name)
	}
	m, err := k.New64(c.Cfg)
	if err != nil {
		t.Fatalf("New64: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(c.Name))))
	in := &inst{m: m, specs: m.Params(), causal: c.Cfg.Causal}
	names := map[string]bool{}
	for _, s := range in.specs {
		if s.Name == "" || names[s.Name] {
			t.Fatalf("parameter name %q empty or repeated", s.Name)
		}
		names[s.Name] = true
		if s.Size() <= 0 {
			t.Fatalf("parameter %s has size %d", s.Name, s.Size())
		}
		w := make([]float64, s.Size())
		for i := range w {
			w[i] = rng.NormFloat64() * 0.3
		}
		in.w = append(in.w, w)
		in.g = append(in.g, make([]float64, s.Size()))
	}
	in.n = c.B * c.T * c.Cfg.D
	in.x = make([]float64, in.n)
	for i := range in.x {
		in.x[i] = rng.NormFloat64()
	}
	in.p = mixer.Pass{B: c.B, T: c.T, Seed: 12345}
	if c.Pad {
		if !k.KeyPadding {
			t.Fatalf("case has padding but kind %s does not support key padding", k.Name)
		}
		in.p.Pad = make([]bool, c.B*c.T)
		for b := 0; b < c.B; b++ {
			// Pad the tail of each sequence (b+1 positions) and one inner
			// position, keeping position 0 a real token.
			for j := c.T - 1 - b; j < c.T; j++ {
				if j > 0 {
					in.p.Pad[b*c.T+j] = true
				}
			}
			if c.T > 3 {
				in.p.Pad[b*c.T+c.T/2] = true
			}
		}
		if c.B >= 2 {
			// A causal query 0 here has no allowed key.
			in.p.Pad[(c.B-1)*c.T] = true
		}
		if allPad {
			for j := 0; j < c.T; j++ {
				in.p.Pad[j] = true
			}
		}
	}
	if c.Setup != nil {
		c.Setup(in.w, in.x)
	}
	m.Bind(in.w, in.g)
	in.act = make([]float64, m.ActSize(c.B, c.T))
	in.scr = make([]float64, m.ScratchSize(c.B, c.T, in.p.Threads))
	return in
}

func (in *inst) forward(x []float64) []float64 {
	out := make([]float64, in.n)
	for i := range out {
		out[i] = math.NaN() // forward must write every output
	}
	in.m.Forward(out, in.act, in.scr, x, in.p)
	return out
}

// loss is Σ out·r, so dout = r.
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func runCase(t *testing.T, k mixer.Kind, c Case, allPad bool) {
	in := build(t, k, c, allPad)
	D := c.Cfg.D

	// Shapes and finiteness.
	out := in.forward(in.x)
	for i, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("forward output %d is %v", i, v)
		}
	}
	// Determinism.
	out2 := in.forward(in.x)
	for i := range out {
		if out[i] != out2[i] {
			t.Fatalf("forward not deterministic at %d: %v vs %v", i, out[i], out2[i])
		}
	}
	// Thread budget: the output is bitwise the same on 1 and 3 threads
	// (Pass.Threads, with scratch sized for it) as on the default.
	for _, th := range []int{1, 3} {
		p := in.p
		p.Threads = th
		o := make([]float64, in.n)
		in.m.Forward(o, make([]float64, in.m.ActSize(c.B, c.T)), make([]float64, in.m.ScratchSize(c.B, c.T, th)), in.x, p)
		for i := range out {
			if math.Float64bits(o[i]) != math.Float64bits(out[i]) {
				t.Fatalf("forward on %d threads differs at %d: %v vs %v on the default", th, i, o[i], out[i])
			}
		}
	}

	// Causality: perturbing positions > t0 leaves outputs at ≤ t0 unchanged.
	if c.Cfg.Causal {
		t0 := c.T / 2
		xp := append([]float64(nil), in.x...)
		for b := 0; b < c.B; b++ {
			for tt := t0 + 1; tt < c.T; tt++ {
				for d := 0; d < D; d++ {
					xp[(b*c.T+tt)*D+d] += 1.5
				}
			}
		}
		op := in.forward(xp)
		for b := 0; b < c.B; b++ {
			for tt := 0; tt <= t0; tt++ {
				for d := 0; d < D; d++ {
					i := (b*c.T+tt)*D + d
					if math.Abs(op[i]-out[i]) > 1e-12*(1+math.Abs(out[i])) {
						t.Fatalf("causality: output b=%d t=%d d=%d changed from %v to %v after perturbing t>%d", b, tt, d, out[i], op[i], t0)
					}
				}
			}
		}
	}

	// Padding: changing padded tokens leaves the other outputs unchanged.
	if in.p.Pad != nil {
		xp := append([]float64(nil), in.x...)
		for i, pad := range in.p.Pad {
			if pad {
				for d := 0; d < D; d++ {
					xp[i*D+d] += 2
				}
			}
		}
		op := in.forward(xp)
		for i, pad := range in.p.Pad {
			if pad {
				continue
			}
			for d := 0; d < D; d++ {
				j := i*D + d
				if math.Abs(op[j]-out[j]) > 1e-12*(1+math.Abs(out[j])) {
					t.Fatalf("padding: output at token %d ch %d changed from %v to %v after changing padded tokens", i, d, out[j], op[j])
				}
			}
		}
	}

	// Backward: inputs not mutated, and a second call doubles the gradients.
	rng := rand.New(rand.NewPCG(7, 7))
	r := make([]float64, in.n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	out = in.forward(in.x)
	xCopy := append([]float64(nil), in.x...)
	rCopy := append([]float64(nil), r...)
	actCopy := append([]float64(nil), in.act...)
	wCopy := copyAll(in.w)
	dx := make([]float64, in.n)
	in.m.Backward(dx, in.scr, r, in.act, in.x, in.p)
	sameOrFail(t, "x", xCopy, in.x)
	sameOrFail(t, "dout", rCopy, r)
	sameOrFail(t, "act", actCopy, in.act)
	for i := range in.w {
		sameOrFail(t, "param "+in.specs[i].Name, wCopy[i], in.w[i])
	}
	// Finite gradients (finite differences below would not notice a NaN).
	finiteOrFail(t, "dx", dx)
	for i := range in.g {
		finiteOrFail(t, "grad "+in.specs[i].Name, in.g[i])
	}
	dx1 := append([]float64(nil), dx...)
	g1 := copyAll(in.g)
	in.m.Backward(dx, in.scr, r, in.act, in.x, in.p)
	closeOrFail(t, "double backward dx", dx, scaled(dx1, 2), 1e-12)
	for i := range in.g {
		closeOrFail(t, "double backward grad "+in.specs[i].Name, in.g[i], scaled(g1[i], 2), 1e-12)
	}

	// Finite differences of L = Σ out·r, in float64.
	tol := c.Tol
	if tol == 0 {
		tol = 1e-6
	}
	ns := c.Samples
	if ns == 0 {
		ns = 24
	}
	const h = 1e-5
	loss := func() float64 { return dot(in.forward(in.x), r) }
	check := func(name string, v, grad []float64) {
		var scale float64 = 1
		for _, g := range grad {
			scale = math.Max(scale, math.Abs(g))
		}
		idx := sample(rng, len(v), ns)
		for _, i := range idx {
			old := v[i]
			v[i] = old + h
			lp := loss()
			v[i] = old - h
			lm := loss()
			v[i] = old
			fd := (lp - lm) / (2 * h)
			if e := math.Abs(fd-grad[i]) / scale; e > tol {
				t.Errorf("finite differences: %s[%d]: analytic %.9g, numeric %.9g (rel err %.3g > %.3g)", name, i, grad[i], fd, e, tol)
				return
			}
		}
	}
	check("x", in.x, dx1)
	for i := range in.w {
		check(in.specs[i].Name, in.w[i], g1[i])
	}
}

func sample(rng *rand.Rand, n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return rng.Perm(n)[:k]
}

func copyAll(v [][]float64) [][]float64 {
	out := make([][]float64, len(v))
	for i := range v {
		out[i] = append([]float64(nil), v[i]...)
	}
	return out
}

func scaled(v []float64, s float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] * s
	}
	return out
}

func finiteOrFail(t *testing.T, name string, v []float64) {
	t.Helper()
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("%s at %d is %v", name, i, x)
		}
	}
}

func sameOrFail(t *testing.T, name string, want, got []float64) {
	t.Helper()
	for i := range want {
		if want[i] != got[i] && !(math.IsNaN(want[i]) && math.IsNaN(got[i])) {
			t.Fatalf("%s was modified at %d: %v -> %v", name, i, want[i], got[i])
		}
	}
}

func closeOrFail(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: at %d got %v want %v", name, i, got[i], want[i])
		}
	}
}

// Float32Agrees checks that the float32 instantiation of k matches the
// float64 one on case c to relative tolerance tol (forward and backward),
// so the fast path is covered by the same oracle.
func Float32Agrees(t *testing.T, k mixer.Kind, c Case, tol float64) {
	t.Helper()
	in := build(t, k, c, false)
	out64 := in.forward(in.x)
	r, dx64 := in.backward(9)
	out32, dx32, g32 := in.run32(t, k, c.Cfg, r)
	relClose(t, "float32 forward", out32, out64, tol)
	relClose(t, "float32 dx", dx32, dx64, tol)
	for i := range in.g {
		relClose(t, "float32 grad "+in.specs[i].Name, g32[i], in.g[i], tol)
	}
}

// backward draws dout = r from seed and runs the float64 Backward on it,
// returning r and dx.
func (in *inst) backward(seed uint64) (r, dx []float64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	r = make([]float64, in.n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	dx = make([]float64, in.n)
	in.m.Backward(dx, in.scr, r, in.act, in.x, in.p)
	return r, dx
}

// run32 builds kind k's float32 mixer of cfg on in's weights (rounded to
// float32) and runs Forward on in.x and Backward on dout r, with NaN
// written over the scratch in between, returning the output, the input
// gradient and the parameter gradients.
func (in *inst) run32(t *testing.T, k mixer.Kind, cfg mixer.Config, r []float64) (out, dx []float32, g [][]float32) {
	t.Helper()
	m32, err := k.New32(cfg)
	if err != nil {
		t.Fatalf("New32: %v", err)
	}
	w32 := make([][]float32, len(in.w))
	g = make([][]float32, len(in.w))
	for i := range in.w {
		w32[i] = to32(in.w[i])
		g[i] = make([]float32, len(in.w[i]))
	}
	m32.Bind(w32, g)
	B, T := in.p.B, in.p.T
	act := make([]float32, m32.ActSize(B, T))
	scr := make([]float32, m32.ScratchSize(B, T, in.p.Threads))
	x32 := to32(in.x)
	out = make([]float32, in.n)
	m32.Forward(out, act, scr, x32, in.p)
	// In a model other layers use the scratch between a layer's Forward
	// and Backward: Backward may read only what Forward kept in act.
	for i := range scr {
		scr[i] = float32(math.NaN())
	}
	dx = make([]float32, in.n)
	m32.Backward(dx, scr, to32(r), act, x32, in.p)
	return out, dx, g
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// relClose fails when got has a NaN or Inf or max|got−want| /
// max(1e-2, max|want|) > tol. The floor
// matters only for tensors that are zero in exact arithmetic, such as the
// key-bias gradient of softmax attention (softmax is shift-invariant), where
// float32 and float64 rounding noise would otherwise be compared.
func relClose(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	var num, den float64
	for i := range want {
		if g := float64(got[i]); math.IsNaN(g) || math.IsInf(g, 0) {
			t.Errorf("%s: element %d is %v (float64: %v)", name, i, g, want[i])
			return
		}
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	if e := num / math.Max(den, 1e-2); e > tol {
		t.Errorf("%s: max rel err %.3g > %.3g", name, e, tol)
	}
}

// PrecisionAgrees checks kind k in a 16-bit precision ("bf16" or "fp16")
// on case c against the model it approximates: the float32 mixer with
// that Config.Precision gives outputs within tol (max|a−b| / max(1e-2, max|b|)) of the float64
// mixer's, and gradients of L = Σ out·r within tol of central finite
// differences of the float64 mixer, on sampled entries of the input and of
// every parameter (scaled by the tensor's largest float64 gradient, or a
// tenth of the mixer's largest when that is more). tol is a bf16 tolerance: bf16 keeps 8 significant bits (relative rounding
// 2⁻⁹).
func PrecisionAgrees(t *testing.T, k mixer.Kind, c Case, precision string, tol float64) {
	t.Helper()
	in := build(t, k, c, false)
	out64 := in.forward(in.x)
	r, dx64 := in.backward(11)
	rng := rand.New(rand.NewPCG(12, 12))
	cfg := c.Cfg
	cfg.Precision = precision
	out16, dx16, g32 := in.run32(t, k, cfg, r)
	relClose(t, precision+" forward", out16, out64, tol)
	// The check is not vacuous: a mixer with parameters (projections in
	// bf16) differs from its float32 self by more than float32 rounding.
	// (In fp16 the products are float32: only the kinds that store their
	// activations in 16 bits differ.)
	if len(in.w) > 0 && precision == "bf16" {
		var d, m float64
		for i, v := range out16 {
			d = math.Max(d, math.Abs(float64(v)-out64[i]))
			m = math.Max(m, math.Abs(out64[i]))
		}
		if d <= 1e-5*m {
			t.Errorf("bf16 forward within %.3g of float64: precision \"bf16\" did not reach the products", d/m)
		}
	}

	ns := c.Samples
	if ns == 0 {
		ns = 24
	}
	const h = 1e-5
	loss := func() float64 { return dot(in.forward(in.x), r) }
	// A tensor's errors are scaled by its largest float64 gradient, but
	// by no less than a tenth of the mixer's largest: a tensor whose
	// gradient is zero in exact arithmetic (the key bias of softmax
	// attention, which is shift-invariant) gets the rounding noise of the
	// terms that cancel in it.
	floor, worst := 1e-2, 0.0
	for _, g := range append([][]float64{dx64}, in.g...) {
		for _, v := range g {
			floor = math.Max(floor, 0.1*math.Abs(v))
		}
	}
	check := func(name string, v, grad64 []float64, grad16 []float32) {
		scale := floor
		for _, g := range grad64 {
			scale = math.Max(scale, math.Abs(g))
		}
		for _, i := range sample(rng, len(v), ns) {
			old := v[i]
			v[i] = old + h
			lp := loss()
			v[i] = old - h
			lm := loss()
			v[i] = old
			fd := (lp - lm) / (2 * h)
			e := math.Abs(fd-float64(grad16[i])) / scale
			worst = math.Max(worst, e)
			if e > tol || math.IsNaN(e) {
				t.Errorf("%s gradient %s[%d]: %.6g, finite differences of float64 %.6g (error %.3g of the largest gradient > %.3g)",
					precision, name, i, grad16[i], fd, e, tol)
				return
			}
		}
	}
	check("x", in.x, dx64, dx16)
	for i := range in.w {
		check(in.specs[i].Name, in.w[i], in.g[i], g32[i])
	}
	t.Logf("%s: worst gradient error %.3g of the largest gradient", precision, worst)
}
