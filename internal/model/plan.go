package model

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/mixer"
)

// span is a range of one slab.
type span struct{ off, n int }

// blockPlan is one block's saved activations (all in the activation slab).
type blockPlan struct {
	ln1, ln1Mean, ln1Rstd span // [B,T,D], [B,T], [B,T]: LN1 output and stats
	mixAct                span // mixer.ActSize(B,T)
	mid                   span // [B,T,D]: x + mixer(LN1(x))
	ln2, ln2Mean, ln2Rstd span // [B,T,D], [B,T], [B,T]
	fch, fcg              span // [B,T,DFF]: fc1 output and GELU(fc1); empty when ff_chunks > 1 (fcg also with the 16-bit slab)
}

// Plan is the memory plan of one (config, B, T): where every activation and
// activation-gradient buffer lives. It is computed in one place, newPlan, so
// the bytes a model needs are known before it runs.
//
// The activation slab holds what forward saves for backward. The gradient
// slab holds activation gradients and scratch that live only within one
// call.
type Plan struct {
	B, T     int
	ElemSize int // bytes per element (4 or 8)
	// Threads is the thread budget the mixers' scratch is sized for (the
	// model's, at the time of the plan): every pass on the plan uses it.
	Threads int
	// Forward says the plan is for a forward that no Backward follows (a
	// Forward without targets: evaluation, inference), which keeps no
	// activations for backward and no gradients (newPlan).
	Forward bool

	ActElems, GradElems int // slab sizes in elements
	// HalfElems is the 16-bit activation slab ("act16"): under precision
	// "bf16" or "fp16" (float32 models, ff_chunks 1, not reversible) the
	// feed-forward's fc1 output is stored there, in bf16 or IEEE half;
	// backward recomputes its GELU from it.
	HalfElems int
	// Entries lists every buffer for reporting: name, slab ("act", "act16" or
	// "grad") and elements. Per-block entries of identical shape are
	// summed under one name with a count.
	Entries []PlanEntry

	res    []span // [n_layers+1] × [B,T,D]: block inputs; res[L] feeds LN_f
	blocks []blockPlan

	lnf, lnfMean, lnfRstd span // [B,T,D], [B,T], [B,T]
	pooled                span // [B,D] (classify)
	logits                span // [B,C] (classify), or [B,T,V] (lm, tag: forward-only plans)
	logitsInGrad          bool // logits lie in the gradient slab (a forward-only plan's token-level head)

	// gradient slab
	dres     span // [B,T,D]: gradient of the residual stream
	dln      span // [B,T,D]: gradient of a LayerNorm output; mixer output temp in forward
	ffh, ffg span // [R,DFF]: fc1 output and GELU when ff_chunks > 1 (R = chunk rows)
	dg, dh   span // [R,DFF]: gradients of GELU output and fc1 output
	ffg16    span // [B·T·DFF/2]: the GELU output in bf16 (see Model.gelu16)
	mixScr   span // max over blocks of mixer.ScratchSize(B,T,Threads)
	dlogits  span // [B,C] (classify), or [headRows,V] (lm: one chunk)
	dpooled  span // [B,D] (classify)
	headGrad span // [V·D+V+B·T·D] (lm): the fused head's weight, bias and input gradients, from forward to backward
	ddrop    span // [B,T,D]: a branch's output gradient through the dropout mask (dropout > 0)

	rev revSpans // reversible blocks only (see reversible.go)
}

// PlanEntry is one line of the memory plan.
type PlanEntry struct {
	Name  string
	Slab  string
	Count int // how many buffers of this size
	Elems int // elements of each
}

// Bytes is the planned memory: activations plus activation gradients and
// scratch.
func (p Plan) Bytes() int64 {
	return int64(p.ActElems+p.GradElems)*int64(p.ElemSize) + 2*int64(p.HalfElems)
}

// entryBytes is the bytes of one buffer of e.
func (p Plan) entryBytes(e PlanEntry) int64 {
	if e.Slab == "act16" {
		return 2 * int64(e.Elems)
	}
	return int64(e.Elems) * int64(p.ElemSize)
}

// ActBytes is the planned memory of the activations forward saves for
// backward (both activation slabs).
func (p Plan) ActBytes() int64 { return int64(p.ActElems*p.ElemSize) + 2*int64(p.HalfElems) }

// String formats the plan as a table.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory plan B=%d T=%d (%d-byte elements)\n", p.B, p.T, p.ElemSize)
	for _, e := range p.Entries {
		fmt.Fprintf(&b, "  %-5s %-22s %4d × %12d = %s\n", e.Slab, e.Name, e.Count, e.Elems, memstat.FormatBytes(int64(e.Count)*p.entryBytes(e)))
	}
	fmt.Fprintf(&b, "  activations %s, activation gradients and scratch %s, total %s\n",
		memstat.FormatBytes(p.ActBytes()), memstat.FormatBytes(int64(p.GradElems*p.ElemSize)), memstat.FormatBytes(p.Bytes()))
	return b.String()
}

// ffRows is the number of rows of one feed-forward chunk (at least one
// row per chunk: ff_chunks beyond the row count, however large, does not
// overflow).
func ffRows(c *Config, bt int) int {
	k := min(c.FFChunks, max(bt, 1))
	return (bt + k - 1) / k
}

// newPlan computes the memory plan for config c with the given mixers
// (for their ActSize and ScratchSize) at batch B and length T, for passes
// on at most threads threads. With fwd it is the plan of a forward that no
// Backward follows (Plan.Forward): the blocks share one residual buffer,
// which each overwrites with its output, and one set of internals, as with
// checkpointing, and the gradient slab holds only the scratch a forward
// uses, which a token-level head's logits then overlay; reversible blocks
// keep their one layout. Only a forward-only plan holds a token-level
// task's logits.
func newPlan[F kernels.Float](c *Config, mixers []mixer.Mixer[F], B, T, threads int, fwd bool) Plan {
	var zero F
	p := Plan{B: B, T: T, ElemSize: int(unsafe.Sizeof(zero)), Threads: threads, Forward: fwd}
	lean := fwd && !c.Reversible // the forward-only layout
	D, BT, L := c.DModel, B*T, c.NLayers
	R := ffRows(c, BT)
	add := func(slab, name string, count, n int) span {
		s := span{n: n}
		switch slab {
		case "act":
			s.off = p.ActElems
			p.ActElems += n
		case "act16":
			s.off = p.HalfElems
			p.HalfElems += n
		default:
			s.off = p.GradElems
			p.GradElems += n
		}
		if count > 0 {
			p.Entries = append(p.Entries, PlanEntry{Name: name, Slab: slab, Count: count, Elems: n})
		}
		return s
	}
	// Residual stream: n_layers+1 block inputs (reversible: the two
	// streams and their mean, whatever the depth; forward only: one, which
	// every block reads and then overwrites).
	switch {
	case c.Reversible:
		p.rev.addActs(&p, c, add)
	case lean: // a block reads its input only until its middle residual is written
		one := add("act", "res", 1, BT*D)
		for i := 0; i <= L; i++ {
			p.res = append(p.res, one)
		}
	default:
		for i := 0; i <= L; i++ {
			p.res = append(p.res, add("act", "res", b2i(i == 0)*(L+1), BT*D))
		}
	}
	// Block internals: one set per block, or one shared set (largest
	// mixer) with checkpointing or reversible blocks.
	shared := c.Checkpoint || (c.Reversible && !c.revKeep) || lean
	nb := L
	if shared {
		nb = 1
	}
	maxAct, maxScr := 0, 0
	for _, m := range mixers {
		maxAct = max(maxAct, m.ActSize(B, T))
		maxScr = max(maxScr, m.ScratchSize(B, T, threads))
	}
	for i := 0; i < nb; i++ {
		cnt := b2i(i == 0) * nb
		var bp blockPlan
		bp.ln1 = add("act", "ln1", cnt, BT*D)
		bp.ln1Mean = add("act", "ln1.mean", cnt, BT)
		bp.ln1Rstd = add("act", "ln1.rstd", cnt, BT)
		na := maxAct
		if !shared {
			na = mixers[i].ActSize(B, T)
		}
		bp.mixAct = add("act", fmt.Sprintf("mixer.act[%d]", i), 1, na)
		if !c.Reversible {
			bp.mid = add("act", "mid", cnt, BT*D)
		}
		bp.ln2 = add("act", "ln2", cnt, BT*D)
		bp.ln2Mean = add("act", "ln2.mean", cnt, BT)
		bp.ln2Rstd = add("act", "ln2.rstd", cnt, BT)
		if c.FFChunks == 1 {
			if Store16(c, p.ElemSize) {
				bp.fch = add("act16", "ff.fc1", cnt, BT*c.DFF)
			} else {
				bp.fch = add("act", "ff.fc1", cnt, BT*c.DFF)
				bp.fcg = add("act", "ff.gelu", cnt, BT*c.DFF)
			}
		}
		p.blocks = append(p.blocks, bp)
	}
	for i := nb; i < L; i++ { // checkpointing: every block shares set 0
		p.blocks = append(p.blocks, p.blocks[0])
	}
	p.lnf = add("act", "ln_f", 1, BT*D)
	p.lnfMean = add("act", "ln_f.mean", 1, BT)
	p.lnfRstd = add("act", "ln_f.rstd", 1, BT)
	V := c.HeadOut()
	switch {
	case c.Pooled():
		p.pooled = add("act", "pooled", 1, B*D)
		p.logits = add("act", "logits", 1, B*V)
	case fwd && !lean: // a token-level task's forward with targets keeps no logits (headTargets)
		p.logits = add("act", "logits", 1, BT*V)
	}

	// The gradient slab. A forward-only plan keeps only a forward's
	// scratch: the mixer's output in dln, fc1's output and GELU in dh and
	// dg when they are kept in 16 bits, and the mixers' scratch.
	if !lean {
		p.dres = add("grad", "d.res", 1, BT*D)
	}
	p.dln = add("grad", "d.ln", 1, BT*D)
	if c.Reversible {
		p.rev.addGrads(&p, c, add)
	}
	if c.FFChunks > 1 {
		p.ffh = add("grad", "ff.fc1 (chunk)", 1, R*c.DFF)
		p.ffg = add("grad", "ff.gelu (chunk)", 1, R*c.DFF)
	}
	if !lean || Store16(c, p.ElemSize) {
		p.dg = add("grad", "d.ff.gelu", 1, R*c.DFF)
		p.dh = add("grad", "d.ff.fc1", 1, R*c.DFF)
	}
	if Store16(c, p.ElemSize) && c.Precision == "bf16" {
		p.ffg16 = add("grad", "ff.gelu (bf16)", 1, (BT*c.DFF+1)/2)
	}
	p.mixScr = add("grad", "mixer.scratch", 1, maxScr)
	if lean {
		if !c.Pooled() { // the head runs after the blocks, so its logits overlay their scratch
			p.logits, p.logitsInGrad = span{0, BT * V}, true
			p.GradElems = max(p.GradElems, BT*V)
			p.Entries = append(p.Entries, PlanEntry{Name: "logits (over the scratch)", Slab: "grad", Count: 1, Elems: BT * V})
		}
		return p
	}
	if c.Pooled() {
		p.dlogits = add("grad", "d.logits", 1, p.logits.n)
		p.dpooled = add("grad", "d.pooled", 1, B*D)
	} else {
		p.dlogits = add("grad", "d.logits (chunk)", 1, headRows(BT, V)*V)
		p.headGrad = add("grad", "head.grad (fused)", 1, V*D+V+BT*D)
	}
	if c.Dropout > 0 {
		p.ddrop = add("grad", "d.dropout", 1, BT*D)
	}
	return p
}

// Store16 says whether a model of config c with elemSize-byte elements
// keeps its fc1 output in the 16-bit slab: float32, precision
// "bf16" or "fp16", ff_chunks 1 (chunks recompute them instead) and not
// reversible.
func Store16(c *Config, elemSize int) bool {
	return elemSize == 4 && (c.Precision == "bf16" || c.Precision == "fp16") && c.FFChunks == 1 && !c.Reversible
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MixerBytes is the planned memory of one mixer layer run alone at (B,T)
// on a budget of threads threads: its input x, output, their gradients
// ([B,T,D] each), its activations and its scratch, in bytes of F.
// `tokenmix bench mixer` reports it.
func MixerBytes[F kernels.Float](m mixer.Mixer[F], B, T, D, threads int) int64 {
	var zero F
	n := 4*B*T*D + m.ActSize(B, T) + m.ScratchSize(B, T, threads)
	return int64(n) * int64(unsafe.Sizeof(zero))
}
