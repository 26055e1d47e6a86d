package model

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Model is the Transformer of the model contract, generic over the float
// type: float32 is the fast path, float64 the gradient-check path.
//
// Parameters live in one slab (Params), their gradients in another (Grads),
// both laid out in the order of Specs. Activations and activation gradients
// live in two slabs sized by the memory plan of the last (B,T).
type Model[F kernels.Float] struct {
	Config *Config
	// Specs lists every parameter with its full name; Offsets[i] is where
	// Specs[i] starts in Params and Grads.
	Specs   []mixer.ParamSpec
	Offsets []int
	Params  []F
	Grads   []F

	// Seed and Step derive each mixer's Pass.Seed (see PassSeed); the
	// trainer sets Step before every forward.
	Seed uint64
	Step int
	// Train makes Forward a training forward: with config dropout > 0 it
	// drops branch outputs (see Config.Dropout), and the Backward after it
	// uses the same masks. Trainer.Step sets it for its forward and
	// backward; evaluation and inference leave it false.
	Train bool

	// MixerInput, when not nil, is called by every block's forward with the
	// block index and that block's mixer input LN1_i(x) [B,T,D], just
	// before the mixer runs (also when Backward recomputes a block with
	// checkpointing or reversible blocks). The slice is the model's own
	// buffer, valid only during the call: copy what you keep. It is for
	// inspection (tokenmix pattern --weights); nil costs nothing.
	MixerInput func(layer int, x []F)

	// Cancel, when not nil, is called by Forward before every block; an
	// error it returns stops the forward there, which returns that error
	// (and leaves nothing for Backward).
	Cancel func() error
	// Threads is the thread budget of every pass of the model, its mixers'
	// included (0: the default, parallel.Threads() at the time of the
	// call). Change it between steps, never between Forward and Backward.
	// The logits of Forward and of decoding are bitwise the same on every
	// budget. The loss's last bits depend on it (per-thread partial sums),
	// and so do the gradients of entmax and topk (a head shared by two
	// threads' work is summed from private accumulators) and aft_conv's
	// rel_bias gradient (per-thread partial sums); every other gradient
	// does not (TestThreadBudget).
	Threads int

	// inspect, set only by Diagnose, sees every layer's output and every
	// gradient by name as they are computed.
	inspect func(name string, x []F)

	mixers []mixer.Mixer[F]
	w, g   params[F]
	// prec is the arithmetic of the matrix products: PrecBF16 for a float32
	// model of precision "bf16", else PrecFP32.
	prec kernels.Prec
	// half: a float32 model of precision "fp16" rounds what it stores to
	// IEEE half (see store).
	half bool
	f16  kernels.Format16 // the 16-bit slab's format (bf16 or fp16)

	// LossScale multiplies the loss's gradient in Backward (0 means 1):
	// the dynamic loss scale of precision "fp16" (Trainer). Grads are then
	// LossScale times the gradient of the loss. Set it before a training
	// Forward: a token-level task's head computes its gradient there, at
	// full scale before it is stored in half (Backward rescales it if
	// LossScale changed in between, but after that rounding).
	LossScale float64
	// bf16 inference (UseBF16): the feed-forward and head weights packed.
	bf16     []blockBF16
	headBF16 *kernels.BF16B

	plan       Plan
	acts, grds []F      // activation slab and gradient slab
	acts16     []uint16 // the 16-bit activation slab (Plan.HalfElems)

	// The last forward's inputs.
	tokens, targets []int32
	pad             []bool // [B,T] from pad_id, or nil
	padBuf          []bool
	nTargets        int
	loss            float64
	dropping        bool    // the last Forward dropped (Train, dropout > 0)
	smooth          float64 // the last Forward's label smoothing (Train only)
	// fused: the last Forward ran the head fused with its backward
	// (headTargets), whose gradients carry the loss scale fusedScale.
	fused      bool
	fusedScale float64
	nce        infoNCE // an embedder's loss state
}

// New builds a model for config c, which must come from ParseConfig (or
// LoadConfig), with zero parameters (call Init or load weights).
func New[F kernels.Float](c *Config) (*Model[F], error) {
	if c.kind.New32 == nil || c.kind.New64 == nil {
		return nil, fmt.Errorf("model: config has no resolved mixer kind (build it with ParseConfig)")
	}
	m := &Model[F]{Config: c}
	var zero F
	if _, ok := any(zero).(float32); ok {
		m.prec = kernels.PrecOf(c.Precision)
		m.half = c.Precision == "fp16"
		m.f16, _ = kernels.Format16Of(c.Precision)
	}
	var mspecs [][]mixer.ParamSpec
	var err error
	if m.mixers, mspecs, err = newMixers[F](c); err != nil {
		return nil, err
	}
	var nm []int
	for _, sp := range mspecs {
		nm = append(nm, len(sp))
	}
	m.Specs = paramSpecs(c, mspecs)
	n := 0
	for _, s := range m.Specs {
		m.Offsets = append(m.Offsets, n)
		n += s.Size()
	}
	m.Params = make([]F, n)
	m.Grads = make([]F, n)
	m.w = views(c, m.Specs, nm, m.Params)
	m.g = views(c, m.Specs, nm, m.Grads)
	for i, mx := range m.mixers {
		mx.Bind(m.w.mixer[i], m.g.mixer[i])
	}
	return m, nil
}

// newMixers builds the mixer of every block of c, unbound, with its
// parameter specs.
func newMixers[F kernels.Float](c *Config) ([]mixer.Mixer[F], [][]mixer.ParamSpec, error) {
	var mixers []mixer.Mixer[F]
	var specs [][]mixer.ParamSpec
	var zero F
	for i := 0; i < c.NLayers; i++ {
		var mx mixer.Mixer[F]
		var err error
		if _, ok := any(zero).(float32); ok {
			var m32 mixer.Mixer[float32]
			m32, err = c.kind.New32(c.MixerConfig(i))
			mx, _ = any(m32).(mixer.Mixer[F])
		} else {
			var m64 mixer.Mixer[float64]
			m64, err = c.kind.New64(c.MixerConfig(i))
			mx, _ = any(m64).(mixer.Mixer[F])
		}
		if err != nil {
			return nil, nil, fmt.Errorf("block %d: %w", i, err)
		}
		mixers = append(mixers, mx)
		specs = append(specs, mx.Params())
	}
	return mixers, specs, nil
}

// NumParams is the number of parameters.
func (m *Model[F]) NumParams() int { return len(m.Params) }

// ParamBytes is the memory of parameters, gradients and the two AdamW
// moments.
func (m *Model[F]) ParamBytes() int64 {
	var zero F
	return 4 * int64(len(m.Params)) * int64(sizeOf(zero))
}

func sizeOf[F kernels.Float](F) int {
	var z F
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// Plan returns the memory plan of a training pass (a forward with targets
// and its backward) over a batch of B sequences of length T on the model's
// thread budget, without allocating it.
func (m *Model[F]) Plan(B, T int) Plan {
	return newPlan(m.Config, m.mixers, B, T, m.threads(), false)
}

// ForwardPlan is Plan for a forward without targets (evaluation,
// inference), which no Backward can follow: about half of Plan, as it
// keeps no block's internals beyond the block's own pass and no
// gradients.
func (m *Model[F]) ForwardPlan(B, T int) Plan {
	return newPlan(m.Config, m.mixers, B, T, m.threads(), true)
}

// Mixer returns block i's mixer (for reporting statistics).
func (m *Model[F]) Mixer(i int) mixer.Mixer[F] { return m.mixers[i] }

// ZeroGrad sets every parameter gradient to zero, on the model's threads.
func (m *Model[F]) ZeroGrad() {
	parallel.For(m.threads(), len(m.Grads), 1<<16, func(_, lo, hi int) { clear(m.Grads[lo:hi]) })
}

// Logits returns the last forward's logits: [B,T,vocab_size] for lm and
// tag, [B,n_classes] for classify. The slice aliases the activation slab.
// A token-level task's forward with targets keeps no logits (the head
// runs in chunks, see headTargets): Logits is nil then.
func (m *Model[F]) Logits() []F {
	return m.logits()
}

// logits is the plan's logits buffer (nil when it has none).
func (m *Model[F]) logits() []F {
	switch p := &m.plan; {
	case p.logits.n == 0:
		return nil
	case p.logitsInGrad:
		return m.grad(p.logits)
	}
	return m.act(m.plan.logits)
}

// Pooled returns the last forward's pooled rows [B, d_model] (the head's
// input) of a classifier or an embedder, a view into the workspace; nil
// for other tasks.
func (m *Model[F]) Pooled() []F {
	if !m.Config.Pooled() {
		return nil
	}
	return m.act(m.plan.pooled)
}

// Loss returns the last forward's loss.
func (m *Model[F]) Loss() float64 { return m.loss }

func (m *Model[F]) act(s span) []F { return m.acts[s.off : s.off+s.n : s.off+s.n] }
func (m *Model[F]) act16(s span) []uint16 {
	return m.acts16[s.off : s.off+s.n : s.off+s.n]
}
func (m *Model[F]) grad(s span) []F { return m.grds[s.off : s.off+s.n : s.off+s.n] }

// threads is the model's thread budget (Threads, else the default).
func (m *Model[F]) threads() int { return mixer.Budget(m.Threads) }

// reserve makes the slabs fit the plan of (B,T) on the model's thread
// budget, the forward-only plan with fwd (ForwardPlan), reallocating only
// when a slab must grow. Mixer scratch is sized per thread, so a changed
// budget re-plans too; the passes until the next reserve run on
// m.plan.Threads.
func (m *Model[F]) reserve(B, T int, fwd bool) {
	th := m.threads()
	if m.plan.B == B && m.plan.T == T && m.plan.Threads == th && m.plan.Forward == fwd && m.acts != nil {
		return
	}
	m.plan = newPlan(m.Config, m.mixers, B, T, th, fwd)
	if cap(m.acts) < m.plan.ActElems {
		m.acts = make([]F, m.plan.ActElems)
	}
	m.acts = m.acts[:m.plan.ActElems]
	if cap(m.grds) < m.plan.GradElems {
		m.grds = make([]F, m.plan.GradElems)
	}
	m.grds = m.grds[:m.plan.GradElems]
	if cap(m.acts16) < m.plan.HalfElems {
		m.acts16 = make([]uint16, m.plan.HalfElems)
	}
	m.acts16 = m.acts16[:m.plan.HalfElems]
}

// CheckBatch validates tokens [B,T] and targets for this config: T ≤
// max_len, token ids in [0, vocab_size), targets [B,T] (lm) or [B]
// (classify) with values in [−1, head width). targets may be nil.
func (c *Config) CheckBatch(tokens, targets []int32, B, T int) error {
	if B < 1 || T < 1 {
		return fmt.Errorf("batch: B=%d and T=%d must be ≥ 1", B, T)
	}
	if T > c.MaxLen {
		return fmt.Errorf("batch: T=%d exceeds max_len %d", T, c.MaxLen)
	}
	if len(tokens) != B*T {
		return fmt.Errorf("batch: %d tokens for B=%d T=%d", len(tokens), B, T)
	}
	for i, v := range tokens {
		if v < 0 || int(v) >= c.VocabSize {
			return fmt.Errorf("batch: token %d at position %d outside [0, vocab_size=%d)", v, i, c.VocabSize)
		}
	}
	if targets == nil {
		return nil
	}
	want, V := B*T, c.HeadOut()
	if c.Pooled() {
		want = B
	}
	if len(targets) != want {
		return fmt.Errorf("batch: %d targets, want %d for task %q", len(targets), want, c.Task)
	}
	if c.Task == "embed" { // the row of each anchor's positive, −1 for a row that is no anchor
		for i, v := range targets {
			if v < -1 || int(v) >= B || int(v) == i {
				return fmt.Errorf("batch: target %d of row %d: want −1 or another row of the batch [0, %d)", v, i, B)
			}
		}
		return nil
	}
	for i, v := range targets {
		if v < -1 || int(v) >= V {
			return fmt.Errorf("batch: target %d at position %d outside [-1, %d)", v, i, V)
		}
	}
	return nil
}

// PassSeed derives the seed of block layer's mixer at a training step from
// the run seed (splitmix64 of each in turn), so random mixers are
// reproducible and replay exactly in backward.
func PassSeed(seed uint64, step, layer int) uint64 {
	return mixer.SplitMix(mixer.SplitMix(mixer.SplitMix(seed)+uint64(step)) + uint64(layer))
}

func (m *Model[F]) pass(layer int) mixer.Pass {
	return mixer.Pass{B: m.plan.B, T: m.plan.T, Pad: m.pad, Seed: PassSeed(m.Seed, m.Step, layer), Threads: m.plan.Threads}
}

// Forward runs the model on tokens [B,T] and returns the loss when targets
// are given (0 otherwise). It keeps what Backward needs.
func (m *Model[F]) Forward(tokens, targets []int32, B, T int) (float64, error) {
	c := m.Config
	if err := c.CheckBatch(tokens, targets, B, T); err != nil {
		return 0, err
	}
	m.reserve(B, T, targets == nil)
	m.tokens, m.targets = tokens, targets
	m.fused, m.nTargets = false, 0
	m.dropping = m.Train && c.Dropout > 0
	m.pad = nil
	if c.PadID != nil {
		if cap(m.padBuf) < B*T {
			m.padBuf = make([]bool, B*T)
		}
		m.pad = m.padBuf[:B*T]
		for i, v := range tokens {
			m.pad[i] = int(v) == *c.PadID
		}
	}
	p, D := &m.plan, c.DModel
	embeddingForward(m.act(p.res[0]), tokens, m.w.embed, m.w.pos, B, T, D)
	m.store(m.act(p.res[0]))
	if m.inspect != nil {
		m.inspect("embedding: output", m.act(p.res[0]))
	}
	var err error
	if c.Reversible {
		err = m.revForward()
	} else {
		for i := 0; i < c.NLayers && err == nil; i++ {
			if err = m.cancelled(); err == nil {
				m.blockForward(i)
			}
		}
	}
	if err != nil {
		m.targets = nil
		return 0, err
	}
	m.loss = m.headForward()
	return m.loss, nil
}

// store gives x, an activation or activation gradient the model keeps,
// the precision it is stored in: under "fp16" every value is rounded to
// IEEE half (kernels.RoundHalf), so an overflow becomes Inf as it would in
// half storage; otherwise it does nothing.
func (m *Model[F]) store(x []F) {
	if m.half {
		kernels.RoundHalf(any(x).([]float32))
	}
}

// gelu16 is the gradient slab's bf16 GELU output [B·T, d_ff] (Plan: a
// float32 model in precision bf16 with the 16-bit slab), or nil.
func (m *Model[F]) gelu16() []uint16 {
	p := &m.plan
	if p.ffg16.n == 0 {
		return nil
	}
	return kernels.Uint16s(any(m.grad(p.ffg16)).([]float32))[:p.B*p.T*m.Config.DFF]
}

// cancelled returns Cancel's verdict, or nil without one.
func (m *Model[F]) cancelled() error {
	if m.Cancel == nil {
		return nil
	}
	return m.Cancel()
}

// blockForward runs block i from res[i] to res[i+1], saving its internals.
func (m *Model[F]) blockForward(i int) {
	p := &m.plan
	x, mid, out := m.act(p.res[i]), m.act(p.blocks[i].mid), m.act(p.res[i+1])
	m.blockMixerForward(i, mid, x, x)
	m.blockFFForward(i, out, mid, mid)
}

// headForward computes LN_f, the head and (with targets) the loss. A
// token-level task's head with targets runs in chunks (headTargets).
func (m *Model[F]) headForward() float64 {
	c, p := m.Config, &m.plan
	B, T, D, V := p.B, p.T, c.DModel, c.HeadOut()
	N := B * T
	lnf := m.act(p.lnf)
	layerNormForward(p.Threads, lnf, m.act(p.lnfMean), m.act(p.lnfRstd), m.act(p.res[c.NLayers]), m.w.lnfw, m.w.lnfb, N, D)
	m.store(lnf)
	if m.inspect != nil {
		m.inspect("ln_f: output", lnf)
	}
	m.smooth = 0
	if m.Train && c.Train != nil {
		m.smooth = c.Train.LabelSmoothing
	}
	if m.targets != nil && !c.Pooled() {
		return m.headTargets()
	}
	logits := m.logits()
	rows := N
	if c.Pooled() {
		pooled := m.act(p.pooled)
		poolForward(pooled, lnf, m.pad, c.Pool == "first", B, T, D)
		kernels.LinearForward(p.Threads, m.prec, logits, pooled, m.w.headw, m.headBF16, m.w.headb, B, D, V, false)
		rows = B
	} else {
		kernels.LinearForward(p.Threads, m.prec, logits, lnf, m.w.headw, m.headBF16, m.w.headb, N, D, V, false)
	}
	if m.inspect != nil {
		m.inspect("head: logits", logits)
	}
	if m.targets == nil {
		m.nTargets = 0
		return 0
	}
	if c.Task == "embed" {
		loss, n := m.nce.forward(logits, m.targets, rows, V, c.Temperature)
		m.nTargets = n
		return loss
	}
	loss, n := crossEntropyForward(p.Threads, logits, m.targets, rows, V, m.smooth)
	m.nTargets = n
	return loss
}

// headRows is the rows of one chunk of the head's backward for N rows
// of V logits: 256K logits (1 MiB in float32, so that a chunk stays in
// cache from its logits to its gradient's two products), but at least 1024
// rows and at most N. Every chunk packs the head's weight for its products
// again, so fewer rows would cost more in packing than they save in
// memory traffic: at V = 32768, d = 256, chunks of 256 rows made the
// training step slower than unfused, and 1024 rows faster.
// headChunkRows, when set (by tests), replaces the rule.
func headRows(N, V int) int {
	if headChunkRows > 0 {
		return min(headChunkRows, N)
	}
	return min(N, max(1024, (1<<18)/max(V, 1)))
}

var headChunkRows int

// fuseHead makes a training forward run the head's backward too (tests
// turn it off to compare the two ways).
var fuseHead = true

// headTargets runs the head of a token-level task's forward with targets
// by chunks of headRows rows, keeping no logits: each chunk's logits, their
// loss and, in their place, their gradient. In a training forward (Train)
// the head's backward runs here too (headChunks), fused: the gradient of
// LN_f's output and the head's weight and bias gradients go to head.grad,
// for Backward. Each chunk's logits are then produced and consumed while
// in cache, and the batch's logits and their gradient are never stored.
// The gradient carries the scale LossScale has at this forward
// (fusedScale); Backward rescales it if LossScale changed since. Otherwise
// only the loss is kept, and a Backward recomputes each chunk's logits.
// Either way the loss and the gradients are bitwise the same.
func (m *Model[F]) headTargets() float64 {
	p := &m.plan
	count := 0
	for _, y := range m.targets {
		if y != -1 {
			count++
		}
	}
	m.nTargets = count
	m.fused = m.Train && fuseHead
	m.fusedScale = m.lossScale()
	if count == 0 {
		return 0
	}
	ce := newCESums(p.Threads)
	var gw, gb, dln []F // nil: the loss only
	if m.fused {
		gw, gb, dln = m.fusedGrads()
		clear(gb)
	}
	m.headChunks(dln, gw, gb, 0, m.chunkGrad(ce, m.fusedScale/float64(count)))
	loss, _ := ce.mean()
	return loss
}

// chunkGrad returns headChunks' fill for a token-level head: the chunk's
// logits, then their losses added to ce and, in their place, the gradient
// of scale times those losses.
func (m *Model[F]) chunkGrad(ce ceSums, scale float64) func(z []F, r0, n int) {
	c, p := m.Config, &m.plan
	D, V := c.DModel, c.HeadOut()
	lnf := m.act(p.lnf)
	return func(z []F, r0, n int) {
		kernels.LinearForward(p.Threads, m.prec, z, lnf[r0*D:(r0+n)*D], m.w.headw, m.headBF16, m.w.headb, n, D, V, false)
		if m.inspect != nil {
			m.inspect(fmt.Sprintf("head: logits (rows %d–%d)", r0, r0+n), z)
		}
		crossEntropyRows(p.Threads, ce, z, m.targets[r0:r0+n], n, V, m.smooth, true, scale)
	}
}

// fusedGrads is head.grad's three parts: the head's weight gradient [V,D],
// its bias gradient [V] and the gradient of LN_f's output [B·T,D].
func (m *Model[F]) fusedGrads() (gw, gb, dln []F) {
	D, V := m.Config.DModel, m.Config.HeadOut()
	hg := m.grad(m.plan.headGrad)
	return hg[:V*D], hg[V*D : V*D+V], hg[V*D+V:]
}

// headChunks is a token-level head's backward by chunks of headRows rows:
// fill writes the gradient of chunk [r0, r0+n)'s logits into z, then the
// chunk's rows of dln [B·T,D] are set to z·W, and zᵀ·LN_f's rows are added
// to gw [V,D] (to beta·gw on the first chunk) and z's column sums to gb.
// With dln nil it only runs fill.
func (m *Model[F]) headChunks(dln, gw, gb []F, beta F, fill func(z []F, r0, n int)) {
	c, p := m.Config, &m.plan
	D, V := c.DModel, c.HeadOut()
	N := p.B * p.T
	lnf, dz := m.act(p.lnf), m.grad(p.dlogits)
	R := headRows(N, V)
	for r0 := 0; r0 < N; r0 += R {
		n := min(R, N-r0)
		z := dz[:n*V]
		fill(z, r0, n)
		if dln == nil {
			continue
		}
		m.store(z)
		if m.inspect != nil {
			m.inspect(fmt.Sprintf("head backward: logits gradient (rows %d–%d)", r0, r0+n), z)
		}
		kernels.Gemm(p.Threads, m.prec, false, false, n, D, V, 1, z, V, m.w.headw, D, 0, dln[r0*D:], D)
		kernels.Gemm(p.Threads, m.prec, true, false, V, D, n, 1, z, V, lnf[r0*D:], D, beta, gw, D)
		kernels.BiasGrad(p.Threads, gb, z, n, V)
		beta = 1
	}
}

// lossScale is LossScale, or 1 for its zero.
func (m *Model[F]) lossScale() float64 {
	if m.LossScale != 0 {
		return m.LossScale
	}
	return 1
}

// Backward accumulates the gradient of the last forward's loss into Grads.
// It panics if the last Forward had no targets.
func (m *Model[F]) Backward() {
	if m.targets == nil {
		panic("model: Backward after a Forward without targets")
	}
	c, p := m.Config, &m.plan
	if c.Reversible {
		m.revBackward()
		return
	}
	dres := m.grad(p.dres)
	clear(dres)
	m.headBackward(dres)
	for i := c.NLayers - 1; i >= 0; i-- {
		if c.Checkpoint {
			m.blockRecompute(i)
		}
		mid := m.act(p.blocks[i].mid)
		m.blockFFBackward(i, dres, dres, mid)
		m.blockMixerBackward(i, dres, dres, m.act(p.res[i]))
		m.store(dres)
	}
	embeddingBackward(m.g.embed, m.g.pos, dres, m.tokens, p.B, p.T, c.DModel)
	m.inspectGrads("embed.", "pos.")
}

// headBackward writes the gradient of the loss with respect to res[L]
// into dres (which must be zero), accumulating the head and LN_f gradients.
// It leaves the forward's state unchanged, so Backward may run again.
func (m *Model[F]) headBackward(dres []F) {
	c, p := m.Config, &m.plan
	B, T, D, V := p.B, p.T, c.DModel, c.HeadOut()
	N := B * T
	dln := m.grad(p.dln)
	switch {
	case m.nTargets == 0:
		clear(dln)
	case m.fused:
		dln = m.headFusedBackward()
	case c.Pooled():
		scale := m.lossScale() / float64(m.nTargets)
		logits, dlogits := m.logits(), m.grad(p.dlogits)
		if c.Task == "embed" {
			m.nce.backward(dlogits, logits, m.targets, B, V, c.Temperature, scale)
		} else {
			crossEntropyBackward(p.Threads, dlogits, logits, m.targets, B, V, scale, m.smooth)
		}
		m.store(dlogits)
		if m.inspect != nil {
			m.inspect("head backward: logits gradient", dlogits)
		}
		dpooled := m.grad(p.dpooled)
		clear(dpooled)
		kernels.LinearBackward(p.Threads, m.prec, dpooled, m.g.headw, m.g.headb, dlogits, m.act(p.pooled), m.w.headw, B, D, V, false)
		clear(dln)
		poolBackward(dln, dpooled, m.pad, c.Pool == "first", B, T, D)
	default: // the forward kept only the loss: each chunk's logits again
		m.headChunks(dln, m.g.headw, m.g.headb, 1, m.chunkGrad(newCESums(p.Threads), m.lossScale()/float64(m.nTargets)))
	}
	layerNormBackward(p.Threads, dres, m.g.lnfw, m.g.lnfb, dln, m.act(p.res[c.NLayers]), m.w.lnfw, m.act(p.lnfMean), m.act(p.lnfRstd), N, D)
	if m.inspect != nil {
		m.inspectGrads(c.HeadName()+".", "ln_f.")
		m.inspect("ln_f backward: input gradient", dres)
	}
}

// headFusedBackward finishes the fused head's backward (headTargets): it
// adds the head's weight and bias gradients to Grads and returns the
// gradient of LN_f's output, all rescaled first if LossScale changed
// since the forward.
func (m *Model[F]) headFusedBackward() []F {
	gw, gb, dln := m.fusedGrads()
	if r := m.lossScale() / m.fusedScale; r != 1 {
		hg := m.grad(m.plan.headGrad)
		kernels.Scale(hg, F(r))
		m.fusedScale = m.lossScale()
	}
	kernels.AddTo(m.plan.Threads, m.g.headw, gw)
	kernels.AddTo(m.plan.Threads, m.g.headb, gb)
	return dln
}
