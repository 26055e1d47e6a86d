package lsh

import (
	"math"

	"tokenmix/kernels"
	"tokenmix/mixer"
)

// load fills the unit keys k [T,dh] and reciprocal norms rn [T] of head h of
// sequence b from qk [B,T,D]. A zero vector gets a zero key.
func (w *work[F]) load(qk []F, b, h int) {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	for t := 0; t < T; t++ {
		src := qk[(b*T+t)*D+h*dh:][:dh]
		var ss float64
		for _, x := range src {
			ss += float64(x) * float64(x)
		}
		var rn F
		if ss > 0 {
			rn = F(1 / math.Sqrt(ss))
		}
		w.rn[t] = rn
		k := w.k[t*dh : (t+1)*dh]
		for d, x := range src {
			k[d] = x * rn
		}
	}
}

// gather copies rows toks of src (row i at off+i·stride, dh wide) into dst
// [len(toks),dh].
func gather[F kernels.Float](dst, src []F, toks []int32, off, stride, dh int) {
	for a, t := range toks {
		copy(dst[a*dh:(a+1)*dh], src[off+int(t)*stride:][:dh])
	}
}

// scatterAdd adds rows of src [len(toks),dh] into dst rows toks.
func scatterAdd[F kernels.Float](dst, src []F, toks []int32, dh int) {
	for a, t := range toks {
		kernels.AddTo(dst[int(t)*dh:(int(t)+1)*dh], src[a*dh:(a+1)*dh])
	}
}

// logits turns w.s [nq,nk] (holding q·k/√dh) into the masked logits of
// window (qs, ks): it subtracts log N_ij for keys found in several rounds and
// sets w.msk to 1 for allowed pairs and 0 for pairs excluded by the causal
// mask or the self rule (a token attends to itself only if it has no other
// key in any round). Masked logits are set to 0 so that exp stays finite.
func (w *work[F]) logits(qs, ks []int32) {
	m := w.m
	nk := len(ks)
	for a, i := range qs {
		row := w.s[a*nk : (a+1)*nk]
		msk := w.msk[a*nk : (a+1)*nk]
		selfOK := w.other[i] == 0
		for c, j := range ks {
			if (m.causal && j > i) || (j == i && !selfOK) {
				row[c], msk[c] = 0, 0
				continue
			}
			msk[c] = 1
			if m.nHashes > 1 {
				row[c] -= F(m.logN[w.dups(i, j)])
			}
		}
	}
}

// forward computes att [B,T,D] (head h's columns of sequence b) and lse
// [B,H,T] for one item, combining rounds with one running softmax per query:
// this equals Σ_r exp(lse_r − logsumexp_r lse_r)·o_r.
func (w *work[F]) forward(att, lse, qk, v []F, b, h int, p mixer.Pass) {
	m := w.m
	T, D, dh := w.t, m.d, m.dh
	w.load(qk, b, h)
	w.hash(qk, b, h, p)
	clear(w.acc)
	clear(w.l)
	for t := range w.mx {
		w.mx[t] = F(math.Inf(-1))
	}
	for r := 0; r < m.nHashes; r++ {
		for ci := 0; ci < int(w.nchunk[r]); ci++ {
			qs, ks := w.window(r, ci)
			nq, nk := len(qs), len(ks)
			gather(w.qc, qk, qs, b*T*D+h*dh, D, dh)
			gather(w.kc, w.k, ks, 0, dh, dh)
			gather(w.vc, v, ks, b*T*D+h*dh, D, dh)
			kernels.GemmST(false, true, nq, nk, dh, m.scale, w.qc, dh, w.kc, dh, 0, w.s, nk)
			w.logits(qs, ks)
			for a, i := range qs {
				row := w.s[a*nk : (a+1)*nk]
				msk := w.msk[a*nk : (a+1)*nk]
				mx := math.Inf(-1)
				for c, x := range row {
					if msk[c] != 0 && float64(x) > mx {
						mx = float64(x)
					}
				}
				if math.IsInf(mx, -1) { // nothing allowed in this round
					clear(row)
					continue
				}
				old := float64(w.mx[i])
				if mx > old {
					if !math.IsInf(old, -1) {
						f := F(math.Exp(old - mx))
						w.l[i] *= f
						acc := w.acc[int(i)*dh : (int(i)+1)*dh]
						for d := range acc {
							acc[d] *= f
						}
					}
					w.mx[i] = F(mx)
				}
				top := w.mx[i]
				for c := range row {
					row[c] = (row[c] - top) * msk[c]
				}
				kernels.Exp(row, row)
				var sum F
				for c := range row {
					row[c] *= msk[c]
					sum += row[c]
				}
				w.l[i] += sum
			}
			kernels.GemmST(false, false, nq, dh, nk, 1, w.s, nk, w.vc, dh, 0, w.oc, dh)
			scatterAdd(w.acc, w.oc, qs, dh)
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
// forward's att, lse, qk and v. With P_ij = exp(s_ij − lse_i) over all rounds,
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
		var s F
		g := datt[off+t*D:][:dh]
		for d, y := range att[off+t*D:][:dh] {
			s += g[d] * y
		}
		w.dd[t] = s
	}
	L := lse[(b*m.h+h)*T : (b*m.h+h+1)*T]
	for r := 0; r < m.nHashes; r++ {
		for ci := 0; ci < int(w.nchunk[r]); ci++ {
			qs, ks := w.window(r, ci)
			nq, nk := len(qs), len(ks)
			gather(w.qc, qk, qs, off, D, dh)
			gather(w.oc, datt, qs, off, D, dh)
			gather(w.kc, w.k, ks, 0, dh, dh)
			gather(w.vc, v, ks, off, D, dh)
			kernels.GemmST(false, true, nq, nk, dh, m.scale, w.qc, dh, w.kc, dh, 0, w.s, nk)
			w.logits(qs, ks)
			for a, i := range qs {
				row := w.s[a*nk : (a+1)*nk]
				msk := w.msk[a*nk : (a+1)*nk]
				for c := range row {
					row[c] = (row[c] - L[i]) * msk[c]
				}
				kernels.Exp(row, row)
				for c := range row {
					row[c] *= msk[c]
				}
			}
			// dV = Pᵀ·dO; dP = dO·Vᵀ; dS = P∘(dP − D).
			kernels.GemmST(true, false, nk, dh, nq, 1, w.s, nk, w.oc, dh, 0, w.dvc, dh)
			scatterAdd(w.dv, w.dvc, ks, dh)
			kernels.GemmST(false, true, nq, nk, dh, 1, w.oc, dh, w.vc, dh, 0, w.dp, nk)
			for a, i := range qs {
				pr := w.s[a*nk : (a+1)*nk]
				dr := w.dp[a*nk : (a+1)*nk]
				for c := range dr {
					dr[c] = pr[c] * (dr[c] - w.dd[i])
				}
			}
			kernels.GemmST(false, false, nq, dh, nk, m.scale, w.dp, nk, w.kc, dh, 0, w.dqc, dh)
			scatterAdd(w.dq, w.dqc, qs, dh)
			kernels.GemmST(true, false, nk, dh, nq, m.scale, w.dp, nk, w.qc, dh, 0, w.dkc, dh)
			scatterAdd(w.dk, w.dkc, ks, dh)
		}
	}
	for t := 0; t < T; t++ {
		k := w.k[t*dh : (t+1)*dh]
		gk := w.dk[t*dh : (t+1)*dh]
		var kd F
		for d := range k {
			kd += k[d] * gk[d]
		}
		rn := w.rn[t]
		gq := w.dq[t*dh : (t+1)*dh]
		dst := dqk[off+t*D:][:dh]
		for d := range dst {
			dst[d] = gq[d] + (gk[d]-k[d]*kd)*rn
		}
		copy(dv[off+t*D:][:dh], w.dv[t*dh:(t+1)*dh])
	}
}
