package lsh

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// load fills the unit keys k [T,dh] and reciprocal norms rn [T] of head h of
// sequence b from qk [B,T,D]. A zero vector gets a zero key.
func (w *work[F]) load(qk []F, b, h int) {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	for t := 0; t < T; t++ {
		w.rn[t] = unitKey(w.k[t*dh:(t+1)*dh], qk[(b*T+t)*D+h*dh:][:dh])
	}
}

// unitKey writes k = s/‖s‖ (zero for a zero s) and returns 1/‖s‖ (or 0).
func unitKey[F kernels.Float](k, s []F) F {
	var ss float64
	for _, x := range s {
		ss += float64(x) * float64(x)
	}
	var rn F
	if ss > 0 {
		rn = F(1 / math.Sqrt(ss))
	}
	for d, x := range s {
		k[d] = x * rn
	}
	return rn
}

// gather copies rows toks of src (row t at off+t·stride, dh wide) into dst
// [len(toks),dh].
func gather[F kernels.Float](dst, src []F, toks []int32, off, stride, dh int) {
	for a, t := range toks {
		copy(dst[a*dh:(a+1)*dh], src[off+int(t)*stride:][:dh])
	}
}

// scatterAdd adds rows of src [len(toks),dh] into dst rows toks.
func scatterAdd[F kernels.Float](dst, src []F, toks []int32, dh int) {
	for a, t := range toks {
		kernels.Axpy(dst[int(t)*dh:(int(t)+1)*dh], 1, src[a*dh:(a+1)*dh])
	}
}

// chunk is one window of a round in sorted-row coordinates: queries are rows
// [a0,a1), keys are rows [b0,b1) (the previous chunk, possibly empty) then
// [a0,a1).
type chunk struct{ a0, a1, b0, b1 int }

func (c chunk) nq() int { return c.a1 - c.a0 }
func (c chunk) np() int { return c.b1 - c.b0 }
func (c chunk) nk() int { return c.np() + c.nq() }

// seg is a run of key rows [r0,r1) that are columns [col, col+r1−r0) of the
// chunk's logits.
type seg struct{ r0, r1, col int }

// segs returns the chunk's key rows as one segment when the previous chunk
// is the adjacent run of rows (always, except for the bidirectional
// wrap-around), else as two; so most windows cost one GEMM per product.
func (c chunk) segs(buf *[2]seg) []seg {
	switch {
	case c.np() == 0:
		buf[0] = seg{c.a0, c.a1, 0}
		return buf[:1]
	case c.b1 == c.a0:
		buf[0] = seg{c.b0, c.a1, 0}
		return buf[:1]
	}
	buf[0], buf[1] = seg{c.b0, c.b1, 0}, seg{c.a0, c.a1, c.np()}
	return buf[:2]
}

// chunks returns round r's sorted tokens and calls fn for each chunk.
func (w *work[F]) chunks(r int, fn func(c chunk)) {
	cs := w.start[r*(w.c+1):]
	pv := w.prev[r*w.c:]
	for ci := 0; ci < int(w.nchunk[r]); ci++ {
		c := chunk{a0: int(cs[ci]), a1: int(cs[ci+1])}
		if p := pv[ci]; p >= 0 {
			c.b0, c.b1 = int(cs[p]), int(cs[p+1])
		}
		fn(c)
	}
}

// scores sets w.s [nq,nk] to the masked logits of chunk c of round r:
// q·k/√dh from the sorted rows, minus log N_ij for keys found in several
// rounds, and −Inf for pairs excluded by the causal mask or the self rule (a
// token attends to itself only if it has no other key in any round).
func (w *work[F]) scores(r int, c chunk) {
	m := w.m
	dh, nq, np, nk := m.dh, c.nq(), c.np(), c.nk()
	q := w.qs[c.a0*dh:]
	var buf [2]seg
	for _, g := range c.segs(&buf) {
		kernels.Gemm(1, w.m.proj.Prec, false, true, nq, g.r1-g.r0, dh, m.scale, q, dh, w.ks[g.r0*dh:], dh, 0, w.s[g.col:], nk)
	}
	ord := w.order[r*w.t : (r+1)*w.t]
	kp, ko := ord[c.b0:c.b1], ord[c.a0:c.a1]
	for a, i := range ko {
		row := w.s[a*nk : (a+1)*nk]
		selfOK := w.other[i] == 0
		w.mask(row[:np], kp, c.b0, i, c.a0+a, selfOK)
		own, keys := row[np:], ko
		if m.causal {
			// The chunk's tokens are in position order: the keys after
			// the query's own column are in its future.
			for col := a + 1; col < len(own); col++ {
				own[col] = F(math.Inf(-1))
			}
			own, keys = own[:a+1], keys[:a+1]
		}
		w.mask(own, keys, c.a0, i, c.a0+a, selfOK)
	}
}

// mask finishes the logits row of query i (sorted row qa) against keys
// (sorted rows from ka on): −Inf for excluded pairs (a future key, or i
// itself when it has other keys), minus log N_ij otherwise.
func (w *work[F]) mask(row []F, keys []int32, ka int, i int32, qa int, selfOK bool) {
	m := w.m
	R, causal, logN := m.nHashes, m.causal, m.logN
	row = row[:len(keys)]
	ninf := F(math.Inf(-1))
	if R == 1 {
		for col, j := range keys {
			if (causal && j > i) || (j == i && !selfOK) {
				row[col] = ninf
			}
		}
		return
	}
	ci := w.sigC[qa*R : (qa+1)*R]
	pi := w.sigP[qa*R : (qa+1)*R]
	sig := w.sigC[ka*R : (ka+len(keys))*R]
	if R == 2 { // the common case, unrolled: N_ij is 1 or 2
		c0, c1, p0, p1 := ci[0], ci[1], pi[0], pi[1]
		l1, l2 := F(logN[1]), F(logN[2])
		for col, j := range keys {
			if (causal && j > i) || (j == i && !selfOK) {
				row[col] = ninf
				continue
			}
			s := sig[2*col : 2*col+2]
			in0 := s[0] == c0 || s[0] == p0
			in1 := s[1] == c1 || s[1] == p1
			if in0 && in1 {
				row[col] -= l2
			} else {
				row[col] -= l1
			}
		}
		return
	}
	for col, j := range keys {
		if (causal && j > i) || (j == i && !selfOK) {
			row[col] = ninf
			continue
		}
		// N_ij, the number of rounds in which key j is in query i's
		// window (Reformer eq. 7): at least 1, this round.
		n := 0
		for r, c := range sig[col*R : col*R+R] {
			if c == ci[r] || c == pi[r] {
				n++
			}
		}
		row[col] -= F(logN[n])
	}
}

// gatherRound fills the sorted rows of round r: queries from qk, unit keys,
// values from v, and rows of dst from src if dst is not nil.
func (w *work[F]) gatherRound(r int, qk, v []F, b, h int, dst, src []F) []int32 {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	n := int(w.start[r*(w.c+1)+int(w.nchunk[r])])
	ord := w.order[r*T : r*T+n]
	off := b*T*D + h*dh
	gather(w.qs, qk, ord, off, D, dh)
	gather(w.ks, w.k, ord, 0, dh, dh)
	gather(w.vs, v, ord, off, D, dh)
	if dst != nil {
		gather(dst, src, ord, off, D, dh)
	}
	if R := m.nHashes; R > 1 {
		// Every round's chunk and previous chunk of each row, so that
		// N_ij reads consecutive rows.
		for a, t := range ord {
			copy(w.sigC[a*R:(a+1)*R], w.chunkOf[int(t)*R:(int(t)+1)*R])
			copy(w.sigP[a*R:(a+1)*R], w.prevOf[int(t)*R:(int(t)+1)*R])
		}
	}
	return ord
}

// forward computes att [B,T,D] (head h's columns of sequence b) and lse
// [B,H,T] for one item. Each round yields, per query, a row max, a row sum
// and an unnormalised output; they are merged into one running softmax per
// query, which equals Σ_r exp(lse_r − logsumexp_r lse_r)·o_r.
func (w *work[F]) forward(att, lse, qk, v []F, b, h int, p mixer.Pass) {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	w.load(qk, b, h)
	w.hash(qk, b, h, p)
	clear(w.acc)
	clear(w.l)
	ninf := F(math.Inf(-1))
	for t := range w.mx {
		w.mx[t] = ninf
	}
	for r := 0; r < m.nHashes; r++ {
		ord := w.gatherRound(r, qk, v, b, h, nil, nil)
		w.chunks(r, func(c chunk) {
			nq, nk := c.nq(), c.nk()
			w.scores(r, c)
			for a := range nq {
				row := w.s[a*nk : (a+1)*nk]
				mx := kernels.Max(row)
				w.rm[c.a0+a] = mx
				if mx == ninf { // nothing allowed in this round
					clear(row)
					w.rl[c.a0+a] = 0
					continue
				}
				w.rl[c.a0+a] = kernels.ExpSub(row, row, mx)
			}
			o := w.os[c.a0*dh:]
			var buf [2]seg
			for k, g := range c.segs(&buf) {
				kernels.Gemm(1, w.m.proj.Prec, false, false, nq, dh, g.r1-g.r0, 1, w.s[g.col:], nk, w.vs[g.r0*dh:], dh, F(k), o, dh)
			}
		})
		for a, t := range ord {
			if w.rl[a] == 0 {
				continue
			}
			acc := w.acc[int(t)*dh : (int(t)+1)*dh]
			o := w.os[a*dh : (a+1)*dh]
			old, mr := w.mx[t], w.rm[a]
			switch {
			case old == ninf:
				copy(acc, o)
				w.mx[t], w.l[t] = mr, w.rl[a]
			case mr > old:
				f := F(math.Exp(float64(old - mr)))
				kernels.Scale(acc, f)
				kernels.Axpy(acc, 1, o)
				w.mx[t], w.l[t] = mr, w.l[t]*f+w.rl[a]
			default:
				f := F(math.Exp(float64(mr - old)))
				kernels.Axpy(acc, f, o)
				w.l[t] += w.rl[a] * f
			}
		}
	}
	for t := 0; t < T; t++ {
		dst := att[(b*T+t)*D+h*dh:][:dh]
		if w.l[t] == 0 { // padding: no keys
			clear(dst)
			lse[(b*m.h+h)*T+t] = 0
			continue
		}
		inv := 1 / w.l[t]
		for d, x := range w.acc[t*dh : (t+1)*dh] {
			dst[d] = x * inv
		}
		lse[(b*m.h+h)*T+t] = w.mx[t] + F(math.Log(float64(w.l[t])))
	}
}

// backward writes head h's columns of sequence b of dqk and dv [B,T,D] (set,
// not accumulated: each item owns its columns) from datt [B,T,D], given the
// forward's att, lse, qk and v. With P_ij = exp(z_ij − lse_i) over all
// rounds (z the masked, duplicate-corrected logits),
//
//	dv_j += Σ_i P_ij·datt_i,  dS_ij = P_ij·(datt_i·v_j − datt_i·att_i),
//
// and dS flows to the query (unnormalised) and through the key
// normalisation k = s/‖s‖: ds += (dk − k·(k·dk))/‖s‖.
func (w *work[F]) backward(dqk, dv, datt, att, lse, qk, v []F, b, h int, p mixer.Pass) {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	w.load(qk, b, h)
	w.hash(qk, b, h, p)
	clear(w.dq)
	clear(w.dk)
	clear(w.dv)
	off := b*T*D + h*dh
	for t := 0; t < T; t++ {
		w.dd[t] = kernels.Dot(datt[off+t*D:][:dh], att[off+t*D:][:dh])
	}
	L := lse[(b*m.h+h)*T : (b*m.h+h+1)*T]
	for r := 0; r < m.nHashes; r++ {
		ord := w.gatherRound(r, qk, v, b, h, w.os, datt)
		n := len(ord)
		clear(w.dqs[:n*dh])
		clear(w.dks[:n*dh])
		clear(w.dvs[:n*dh])
		w.chunks(r, func(c chunk) {
			nq, nk := c.nq(), c.nk()
			w.scores(r, c)
			for a, i := range ord[c.a0:c.a1] {
				row := w.s[a*nk : (a+1)*nk]
				kernels.ExpSub(row, row, L[i])
			}
			do := w.os[c.a0*dh:]
			// dV = Pᵀ·dO; dP = dO·Vᵀ; dS = P∘(dP − D); dQ = dS·K; dK = dSᵀ·Q.
			var buf [2]seg
			segs := c.segs(&buf)
			for _, g := range segs {
				n := g.r1 - g.r0
				kernels.Gemm(1, w.m.proj.Prec, true, false, n, dh, nq, 1, w.s[g.col:], nk, do, dh, 1, w.dvs[g.r0*dh:], dh)
				kernels.Gemm(1, w.m.proj.Prec, false, true, nq, n, dh, 1, do, dh, w.vs[g.r0*dh:], dh, 0, w.dp[g.col:], nk)
			}
			for a, i := range ord[c.a0:c.a1] {
				kernels.SubMul(w.dp[a*nk:(a+1)*nk], w.s[a*nk:(a+1)*nk], w.dd[i]) // dS = P∘(dP − D)
			}
			q := w.qs[c.a0*dh:]
			for _, g := range segs {
				n := g.r1 - g.r0
				kernels.Gemm(1, w.m.proj.Prec, false, false, nq, dh, n, m.scale, w.dp[g.col:], nk, w.ks[g.r0*dh:], dh, 1, w.dqs[c.a0*dh:], dh)
				kernels.Gemm(1, w.m.proj.Prec, true, false, n, dh, nq, m.scale, w.dp[g.col:], nk, q, dh, 1, w.dks[g.r0*dh:], dh)
			}
		})
		scatterAdd(w.dq, w.dqs, ord, dh)
		scatterAdd(w.dk, w.dks, ord, dh)
		scatterAdd(w.dv, w.dvs, ord, dh)
	}
	for t := 0; t < T; t++ {
		k := w.k[t*dh : (t+1)*dh]
		gk := w.dk[t*dh : (t+1)*dh]
		kd := kernels.Dot(k, gk)
		rn := w.rn[t]
		gq := w.dq[t*dh : (t+1)*dh]
		dst := dqk[off+t*D:][:dh]
		for d := range dst {
			dst[d] = gq[d] + (gk[d]-k[d]*kd)*rn
		}
		copy(dv[off+t*D:][:dh], w.dv[t*dh:(t+1)*dh])
	}
}
