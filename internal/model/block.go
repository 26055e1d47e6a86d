package model

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// The per-block functions below are the seam between the residual wiring
// (standard pre-LN here; reversible blocks later) and the two branches of a
// block. Each forward computes out = res + branch(x); each backward
// accumulates ∂loss/∂x of the branch alone into dx given dout = ∂loss/∂out
// (the residual identity is the caller's business). dx may alias dout.
//
// Shapes: x, res, out, dx, dout [B,T,D].

// blockMixerForward sets out = res + mixer_i(LN1_i(x)), saving LN1's output
// and statistics and the mixer's activations in block i's plan slots. out
// may alias res.
func (m *Model[F]) blockMixerForward(i int, out, res, x []F) {
	c, p := m.Config, &m.plan
	a := &p.blocks[i]
	N, D := p.B*p.T, c.DModel
	bw := &m.w.blocks[i]
	ln1 := m.act(a.ln1)
	layerNormForward(p.Threads, ln1, m.act(a.ln1Mean), m.act(a.ln1Rstd), x, bw.ln1w, bw.ln1b, N, D)
	m.store(ln1)
	if m.MixerInput != nil {
		m.MixerInput(i, ln1)
	}
	if m.inspect != nil {
		m.inspect(fmt.Sprintf("blocks.%d.ln1: output", i), ln1)
	}
	tmp := m.grad(p.dln) // the mixer output; dln is free during forward
	mx := m.mixers[i]
	mx.Forward(tmp, m.act(a.mixAct)[:mx.ActSize(p.B, p.T)], m.grad(p.mixScr)[:mx.ScratchSize(p.B, p.T, p.Threads)], ln1, m.pass(i))
	if m.dropping {
		m.drop(tmp, tmp, i, 0)
	}
	if m.inspect != nil {
		m.inspect(fmt.Sprintf("blocks.%d.mixer: output", i), tmp)
	}
	addRows(p.Threads, out, res, tmp)
	m.store(out)
}

// blockMixerBackward accumulates into dx the gradient of mixer_i(LN1_i(x))
// with respect to x, and into the LN1 and mixer parameter gradients.
func (m *Model[F]) blockMixerBackward(i int, dx, dout, x []F) {
	c, p := m.Config, &m.plan
	a := &p.blocks[i]
	N, D := p.B*p.T, c.DModel
	dln := m.grad(p.dln)
	clear(dln)
	if m.dropping {
		dout = m.dropGrad(dout, i, 0)
	}
	mx := m.mixers[i]
	mx.Backward(dln, m.grad(p.mixScr)[:mx.ScratchSize(p.B, p.T, p.Threads)], dout, m.act(a.mixAct)[:mx.ActSize(p.B, p.T)], m.act(a.ln1), m.pass(i))
	if m.inspect != nil {
		m.inspect(fmt.Sprintf("blocks.%d.mixer backward: input gradient", i), dln)
		m.inspectGrads(fmt.Sprintf("blocks.%d.mixer.", i))
	}
	bw, bg := &m.w.blocks[i], &m.g.blocks[i]
	layerNormBackward(p.Threads, dx, bg.ln1w, bg.ln1b, dln, x, bw.ln1w, m.act(a.ln1Mean), m.act(a.ln1Rstd), N, D)
	if m.inspect != nil {
		m.inspectGrads(fmt.Sprintf("blocks.%d.ln1.", i))
		m.inspect(fmt.Sprintf("blocks.%d.ln1 backward: input gradient", i), dx)
	}
}

// ffSave computes and saves block i's LN2 output and statistics from x and,
// with ff_chunks = 1, the fc1 output and its GELU, which it returns (in F).
// With the 16-bit slab they are computed in the gradient slab's dh and dg,
// free during forward: h is rounded to the 16-bit format before GELU and
// kept in the slab, and g is not kept (backward recomputes it from h) but
// rounded to fp16, or, in bf16, written to the gradient slab's bf16 g
// that fc2 reads.
func (m *Model[F]) ffSave(i int, x []F) (g []F) {
	c, p := m.Config, &m.plan
	a := &p.blocks[i]
	N, D, H := p.B*p.T, c.DModel, c.DFF
	bw := &m.w.blocks[i]
	ln2 := m.act(a.ln2)
	layerNormForward(p.Threads, ln2, m.act(a.ln2Mean), m.act(a.ln2Rstd), x, bw.ln2w, bw.ln2b, N, D)
	m.store(ln2)
	if c.FFChunks == 1 && m.ffSaveFused(i, ln2) {
		return nil
	}
	var h []F
	if c.FFChunks == 1 {
		h, g = m.act(a.fch), m.act(a.fcg)
		var round, keep func(lo, hi int)
		if p.HalfElems > 0 {
			h, g = m.grad(p.dh), m.grad(p.dg)
			h32, g32 := any(h).([]float32), any(g).([]float32)
			h16, g16 := m.act16(a.fch), m.gelu16()
			round = func(lo, hi int) { m.f16.KeepST(h16[lo*H:hi*H], h32[lo*H:hi*H]) }
			keep = func(lo, hi int) { // a block of rows, while in cache
				if g16 != nil {
					kernels.ToBF16(kernels.AsBF16(g16[lo*H:hi*H]), g32[lo*H:hi*H])
				} else {
					m.store(g[lo*H : hi*H])
				}
			}
		}
		fc1GeluForward(p.Threads, m.prec, h, g, ln2, bw.fc1w, m.packed(i).fc1(), bw.fc1b, N, D, H, round, keep)
		if keep == nil {
			m.store(h)
			m.store(g)
		}
	}
	if m.inspect != nil {
		m.inspect(fmt.Sprintf("blocks.%d.ln2: output", i), ln2)
		if c.FFChunks == 1 {
			m.inspect(fmt.Sprintf("blocks.%d.ff.fc1: output", i), h)
			m.inspect(fmt.Sprintf("blocks.%d.ff.gelu: output", i), g)
		}
	}
	return g
}

// ffSaveFused is ffSave's fc1 and GELU in bf16 training (the 16-bit
// slab, no inspection hook) by blocks of rows (ffBlocksBF16): each
// block's h is rounded and kept in 16 bits and its GELU written to the
// bf16 g that fc2 reads while the block is in cache, so neither goes to
// memory in float32; the gradient slab's dh holds the workers' blocks and
// dg fc1's packed weights. It returns false, having done nothing, where
// fc2 cannot read that g directly or the scratch is too small.
func (m *Model[F]) ffSaveFused(i int, ln2 []F) bool {
	c, p := m.Config, &m.plan
	N, D, H := p.B*p.T, c.DModel, c.DFF
	g16 := m.gelu16()
	if p.HalfElems == 0 || g16 == nil || m.packed(i) != nil || m.inspect != nil {
		return false
	}
	if _, ok := kernels.RowsA(N, H, kernels.AsBF16(g16)); !ok {
		return false
	}
	scr, wbuf := any(m.grad(p.dh)).([]float32), any(m.grad(p.dg)).([]float32)
	nt := ffWorkers(p.Threads, D, H, len(scr))
	if nt == 0 || kernels.PackedSizeB(D, H) > 2*len(wbuf) {
		return false
	}
	a, bw := &p.blocks[i], &m.w.blocks[i]
	w1 := kernels.BF16B{Data: kernels.AsBF16(kernels.Uint16s(wbuf))}
	kernels.PackBF16B(p.Threads, &w1, true, D, H, any(bw.fc1w).([]float32), D)
	h16 := m.act16(a.fch)
	round := func(r0 int, h []float32) { m.f16.KeepST(h16[r0*H:r0*H+len(h)], h) }
	keep := func(r0 int, g []float32, _ []kernels.BF16) {
		kernels.ToBF16(kernels.AsBF16(g16[r0*H:r0*H+len(g)]), g)
	}
	ffBlocksBF16(nt, any(ln2).([]float32), any(bw.fc1b).([]float32), &w1, N, D, H, scr, round, keep)
	return true
}

// blockFFForward sets out = res + FF_i(LN2_i(x)). With ff_chunks > 1 the
// feed-forward runs over chunks of rows and its hidden activations are not
// kept. out may alias res.
func (m *Model[F]) blockFFForward(i int, out, res, x []F) {
	if m.ffFused(i, out, res, x) {
		return
	}
	g := m.ffSave(i, x)
	if m.dropping { // the branch into dln (free during forward), masked, then added
		br := m.grad(m.plan.dln)
		m.ffBranch(i, br, nil, g)
		m.drop(br, br, i, 1)
		addRows(m.plan.Threads, out, res, br)
	} else {
		m.ffBranch(i, out, res, g)
	}
	m.store(out)
	if m.inspect != nil {
		m.inspect(fmt.Sprintf("blocks.%d.ff.fc2: output (with the residual)", i), out)
	}
}

// ffFused runs blockFFForward by ffForwardBF16 and returns true in a
// forward-only pass in bf16 inference (the weights packed, float32,
// ff_chunks = 1, no dropout, no inspection hook), with fc1's float32
// output buffer, which it does not need, as the workers' scratch;
// otherwise it does nothing and returns false.
func (m *Model[F]) ffFused(i int, out, res, x []F) bool {
	c, p := m.Config, &m.plan
	pk := m.packed(i)
	if pk == nil || !p.Forward || c.FFChunks != 1 || p.HalfElems > 0 || m.dropping || m.inspect != nil {
		return false
	}
	a := &p.blocks[i]
	N, D, H := p.B*p.T, c.DModel, c.DFF
	scr := any(m.act(a.fch)).([]float32)
	nt := ffWorkers(p.Threads, D, H, len(scr))
	if nt == 0 {
		return false
	}
	bw := &m.w.blocks[i]
	ln2 := m.act(a.ln2)
	layerNormForward(p.Threads, ln2, m.act(a.ln2Mean), m.act(a.ln2Rstd), x, bw.ln2w, bw.ln2b, N, D)
	f32 := kernels.F32[F]
	m.store(ln2)
	ffForwardBF16(nt, f32(out), f32(res), f32(ln2), f32(bw.fc1b), f32(bw.fc2b), pk, N, D, H, scr)
	m.store(out)
	return true
}

// ffBranch sets out = res + FF_i (res nil: out = FF_i; res may be out)
// given ffSave's GELU output g (nil with ff_chunks > 1, which recomputes
// each chunk's).
func (m *Model[F]) ffBranch(i int, out, res, g []F) {
	c, p := m.Config, &m.plan
	a := &p.blocks[i]
	N, D, H := p.B*p.T, c.DModel, c.DFF
	bw := &m.w.blocks[i]
	if c.FFChunks == 1 && p.HalfElems > 0 && m.prec == kernels.PrecBF16 {
		// fc2 reads ffSave's bf16 g as its packed input.
		if a16, ok := kernels.RowsA(N, H, kernels.AsBF16(m.gelu16())); ok {
			f32 := kernels.F32[F]
			kernels.LinearForwardBF16(m.plan.Threads, f32(out), f32(res), kernels.PackedA(&a16), f32(bw.fc2w), nil, f32(bw.fc2b), N, H, D)
			return
		}
	}
	switch { // the paths below add to out
	case res == nil:
		clear(out[:N*D])
	case len(res) > 0 && &res[0] != &out[0]:
		copy(out[:N*D], res[:N*D])
	}
	if c.FFChunks == 1 {
		kernels.LinearForward(m.plan.Threads, m.prec, out, g, bw.fc2w, m.packed(i).fc2(), bw.fc2b, N, H, D, true)
		return
	}
	ln2 := m.act(a.ln2)
	R := ffRows(c, N)
	for lo := 0; lo < N; lo += R {
		r := min(R, N-lo)
		ffForward(p.Threads, m.prec, out[lo*D:(lo+r)*D], m.grad(p.ffh)[:r*H], m.grad(p.ffg)[:r*H], ln2[lo*D:(lo+r)*D],
			bw.fc1w, bw.fc1b, bw.fc2w, bw.fc2b, m.packed(i), r, D, H)
	}
}

// blockFFBackward accumulates into dx the gradient of FF_i(LN2_i(x)) with
// respect to x, and into the LN2 and FF parameter gradients. With
// ff_chunks > 1 it recomputes each chunk's hidden activations first.
func (m *Model[F]) blockFFBackward(i int, dx, dout, x []F) {
	c, p := m.Config, &m.plan
	a := &p.blocks[i]
	N, D, H := p.B*p.T, c.DModel, c.DFF
	bw, bg := &m.w.blocks[i], &m.g.blocks[i]
	ln2, dln := m.act(a.ln2), m.grad(p.dln) // ffBackward writes every row of dln
	if m.dropping {
		dout = m.dropGrad(dout, i, 1)
	}
	if c.FFChunks == 1 {
		var hs hidden[F]
		var g []F
		switch {
		case p.HalfElems > 0 && m.prec == kernels.PrecBF16:
			// g is recomputed in bf16, which fc2's weight gradient reads:
			// where the bf16 g's memory holds its pair layout, by
			// ffBackward's blocks, else here in rows.
			g16, h16 := m.gelu16(), m.act16(a.fch)
			hs = hidden[F]{h16: h16, f16: m.f16, g16: g16}
			if gb := new(kernels.BF16B); m.f16 == kernels.StoreBF16 && kernels.PackedSizeB(N, H) <= len(g16) {
				kernels.ShapeBF16B(gb, N, H, kernels.AsBF16(g16))
				hs.gb = gb
			} else {
				geluFrom16(p.Threads, m.f16, nil, g16, h16)
			}
		case p.HalfElems > 0:
			// g is recomputed into dh, which GELU's backward overwrites
			// only after the last use of g; h is read back chunk by chunk.
			g = m.grad(p.dh)
			geluFrom16(p.Threads, m.f16, any(g).([]float32), nil, m.act16(a.fch))
			hs = hidden[F]{h16: m.act16(a.fch), f16: m.f16}
		default:
			hs, g = hidden[F]{h: m.act(a.fch)}, m.act(a.fcg)
		}
		ffBackward(p.Threads, m.prec, dln, bg.fc1w, bg.fc1b, bg.fc2w, bg.fc2b, m.grad(p.dg), m.grad(p.dh), dout, ln2,
			hs, g, bw.fc1w, bw.fc2w, N, D, H)
	} else {
		R := ffRows(c, N)
		for lo := 0; lo < N; lo += R {
			r := min(R, N-lo)
			h, g := m.grad(p.ffh)[:r*H], m.grad(p.ffg)[:r*H]
			in := ln2[lo*D : (lo+r)*D]
			fc1GeluForward(p.Threads, m.prec, h, g, in, bw.fc1w, nil, bw.fc1b, r, D, H, nil, nil)
			ffBackward(p.Threads, m.prec, dln[lo*D:(lo+r)*D], bg.fc1w, bg.fc1b, bg.fc2w, bg.fc2b, m.grad(p.dg)[:r*H], m.grad(p.dh)[:r*H],
				dout[lo*D:(lo+r)*D], in, hidden[F]{h: h}, g, bw.fc1w, bw.fc2w, r, D, H)
		}
	}
	if m.inspect != nil {
		m.inspectGrads(fmt.Sprintf("blocks.%d.ff.fc2.", i), fmt.Sprintf("blocks.%d.ff.fc1.", i))
		m.inspect(fmt.Sprintf("blocks.%d.ff backward: input gradient", i), dln)
	}
	layerNormBackward(p.Threads, dx, bg.ln2w, bg.ln2b, dln, x, bw.ln2w, m.act(a.ln2Mean), m.act(a.ln2Rstd), N, D)
	if m.inspect != nil {
		m.inspectGrads(fmt.Sprintf("blocks.%d.ln2.", i))
		m.inspect(fmt.Sprintf("blocks.%d.ln2 backward: input gradient", i), dx)
	}
}

// blockRecompute rebuilds block i's internals from its saved input res[i]
// (gradient checkpointing). It repeats exactly the forward's computations,
// so the gradients are bitwise those without checkpointing.
func (m *Model[F]) blockRecompute(i int) {
	p := &m.plan
	x, mid := m.act(p.res[i]), m.act(p.blocks[i].mid)
	m.blockMixerForward(i, mid, x, x)
	m.ffSave(i, mid)
}

// addRows sets dst = a + b (kernels.Add splits large inputs across at
// most threads threads).
func addRows[F kernels.Float](threads int, dst, a, b []F) {
	kernels.Add(threads, dst, a, b)
}
