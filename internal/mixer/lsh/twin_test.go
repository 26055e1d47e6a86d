package lsh

import (
	"math"
	"sort"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// This file is the naive twin of the LSH mixer: it materialises, for each
// (sequence, head, round), the T×T window mask from the same rotations, and
// runs dense masked softmax attention per round, combining rounds with the
// paper's formula out = Σ_r exp(lse_r − logsumexp_r lse_r)·o_r. Its backward
// is the per-round chain rule (through o_r and lse_r), derived separately
// from the fast path's single-softmax form. float64 only.

// twin holds the parameters [qk.w, qk.b, v.w, v.b, o.w, o.b] and the config.
type twin struct {
	m      *LSH[float64]
	w      [][]float64
	full   bool // every allowed key in one round (dense shared-QK attention)
	causal bool
}

// masks returns win[r][i*T+j] (key j in query i's round-r window) for head h
// of sequence b, given s [T,dh] (the head's shared vectors).
func (tw *twin) masks(s [][]float64, b, h int, p mixer.Pass) [][]bool {
	T := p.T
	if tw.full {
		win := make([]bool, T*T)
		for i := range T {
			for j := range T {
				win[i*T+j] = p.Allowed(b, i) && p.Allowed(b, j)
			}
		}
		return [][]bool{win}
	}
	m := tw.m
	nb := m.NBuckets(T)
	half := nb / 2
	rot := make([]float64, m.dh*half)
	var out [][]bool
	for r := range m.nHashes {
		m.Rotation(rot, p.Seed, r, h, nb)
		members := make([][]int, nb) // tokens of each bucket, in position order
		for t := range T {
			if !p.Allowed(b, t) {
				continue
			}
			best, arg := math.Inf(-1), 0
			for c := range nb {
				var x float64
				for d := range m.dh {
					x += s[t][d] * rot[d*half+c%half]
				}
				if c >= half {
					x = -x
				}
				if x > best {
					best, arg = x, c
				}
			}
			members[arg] = append(members[arg], t)
		}
		win := make([]bool, T*T)
		for _, mem := range members {
			sort.Ints(mem)
			nc := (len(mem) + m.bucketSize - 1) / m.bucketSize
			chunk := func(k int) []int { return mem[k*m.bucketSize : min((k+1)*m.bucketSize, len(mem))] }
			for a, i := range mem {
				k := a / m.bucketSize
				keys := append([]int(nil), chunk(k)...)
				if k > 0 {
					keys = append(keys, chunk(k-1)...)
				} else if !tw.causal && nc >= 2 {
					keys = append(keys, chunk(nc-1)...)
				}
				for _, j := range keys {
					win[i*T+j] = true
				}
			}
		}
		out = append(out, win)
	}
	return out
}

// attend is one head of one sequence: it returns att [T][dh] and the data
// backward needs, with z[r][i*T+j] the logits (−Inf where excluded).
type headState struct {
	s, k, v [][]float64 // [T][dh]
	z       [][]float64 // [R][T*T]
	lse     [][]float64 // [R][T]
	o       [][][]float64
	att     [][]float64
	L       []float64
}

func (tw *twin) head(qk, v []float64, b, h int, p mixer.Pass) *headState {
	m := tw.m
	T, D, dh := p.T, m.d, m.dh
	st := &headState{}
	for t := range T {
		sv := append([]float64(nil), qk[(b*T+t)*D+h*dh:][:dh]...)
		var nrm float64
		for _, x := range sv {
			nrm += x * x
		}
		nrm = math.Sqrt(nrm)
		kv := make([]float64, dh)
		for d := range kv {
			kv[d] = sv[d] / nrm
		}
		st.s = append(st.s, sv)
		st.k = append(st.k, kv)
		st.v = append(st.v, append([]float64(nil), v[(b*T+t)*D+h*dh:][:dh]...))
	}
	win := tw.masks(st.s, b, h, p)
	R := len(win)
	allowed := func(r, i, j int) bool { return win[r][i*T+j] && (!tw.causal || j <= i) }
	other := make([]bool, T)
	for r := range R {
		for i := range T {
			for j := range T {
				if j != i && allowed(r, i, j) {
					other[i] = true
				}
			}
		}
	}
	scale := 1 / math.Sqrt(float64(dh))
	st.att = make([][]float64, T)
	st.L = make([]float64, T)
	for r := range R {
		z := make([]float64, T*T)
		lse := make([]float64, T)
		o := make([][]float64, T)
		for i := range T {
			o[i] = make([]float64, dh)
			mx := math.Inf(-1)
			for j := range T {
				z[i*T+j] = math.Inf(-1)
				if !allowed(r, i, j) || (j == i && other[i]) {
					continue
				}
				n := 0
				for r2 := range R {
					if win[r2][i*T+j] {
						n++
					}
				}
				var dot float64
				for d := range dh {
					dot += st.s[i][d] * st.k[j][d]
				}
				z[i*T+j] = dot*scale - math.Log(float64(n))
				mx = math.Max(mx, z[i*T+j])
			}
			lse[i] = mx
			if math.IsInf(mx, -1) {
				continue
			}
			var sum float64
			for j := range T {
				sum += math.Exp(z[i*T+j] - mx)
			}
			lse[i] = mx + math.Log(sum)
			for j := range T {
				pr := math.Exp(z[i*T+j] - lse[i])
				for d := range dh {
					o[i][d] += pr * st.v[j][d]
				}
			}
		}
		st.z = append(st.z, z)
		st.lse = append(st.lse, lse)
		st.o = append(st.o, o)
	}
	for i := range T {
		st.att[i] = make([]float64, dh)
		L := math.Inf(-1)
		for r := range R {
			if !math.IsInf(st.lse[r][i], -1) {
				L = math.Max(L, st.lse[r][i])
			}
		}
		st.L[i] = L
		if math.IsInf(L, -1) {
			continue
		}
		var sum float64
		for r := range R {
			sum += math.Exp(st.lse[r][i] - L)
		}
		L += math.Log(sum)
		st.L[i] = L
		for r := range R {
			wr := math.Exp(st.lse[r][i] - L)
			for d := range dh {
				st.att[i][d] += wr * st.o[r][i][d]
			}
		}
	}
	return st
}

func twinLinear(y, x, w, b []float64, n, out, in int) {
	for i := range n {
		for o := range out {
			s := b[o]
			for c := range in {
				s += x[i*in+c] * w[o*in+c]
			}
			y[i*out+o] = s
		}
	}
}

// forward returns out [B,T,D] and the per-head states.
func (tw *twin) forward(x []float64, p mixer.Pass) (out, att []float64, sts [][]*headState) {
	m := tw.m
	n, D := p.B*p.T, m.d
	qk := make([]float64, n*D)
	v := make([]float64, n*D)
	twinLinear(qk, x, tw.w[0], tw.w[1], n, D, D)
	attn.RopeRef(qk, p.B, p.T, D, m.dh, attn.RopeBase(m.rope), false)
	twinLinear(v, x, tw.w[2], tw.w[3], n, D, D)
	att = make([]float64, n*D)
	sts = make([][]*headState, p.B)
	for b := range p.B {
		for h := range m.h {
			st := tw.head(qk, v, b, h, p)
			sts[b] = append(sts[b], st)
			for t := range p.T {
				copy(att[(b*p.T+t)*D+h*m.dh:], st.att[t])
			}
		}
	}
	out = make([]float64, n*D)
	twinLinear(out, att, tw.w[4], tw.w[5], n, D, D)
	return out, att, sts
}

// backward returns dx and the parameter gradients for dout.
func (tw *twin) backward(x, dout []float64, p mixer.Pass) ([]float64, [][]float64) {
	m := tw.m
	n, D, dh, T := p.B*p.T, m.d, m.dh, p.T
	_, att, sts := tw.forward(x, p)
	g := make([][]float64, 6)
	for i := range g {
		g[i] = make([]float64, len(tw.w[i]))
	}
	linGrad := func(dw, db, dy, xin, dxin, w []float64) {
		for i := range n {
			for o := range D {
				gy := dy[i*D+o]
				db[o] += gy
				for c := range D {
					dw[o*D+c] += gy * xin[i*D+c]
					if dxin != nil {
						dxin[i*D+c] += gy * w[o*D+c]
					}
				}
			}
		}
	}
	datt := make([]float64, n*D)
	linGrad(g[4], g[5], dout, att, datt, tw.w[4])
	dqk := make([]float64, n*D)
	dv := make([]float64, n*D)
	scale := 1 / math.Sqrt(float64(dh))
	for b := range p.B {
		for h := range m.h {
			st := sts[b][h]
			ds := make([][]float64, T) // as query
			dk := make([][]float64, T) // w.r.t. unit key
			dvh := make([][]float64, T)
			for t := range T {
				ds[t], dk[t], dvh[t] = make([]float64, dh), make([]float64, dh), make([]float64, dh)
			}
			for i := range T {
				if math.IsInf(st.L[i], -1) {
					continue
				}
				gi := datt[(b*T+i)*D+h*dh:][:dh]
				var gOut float64
				for d := range dh {
					gOut += gi[d] * st.att[i][d]
				}
				for r := range st.z {
					if math.IsInf(st.lse[r][i], -1) {
						continue
					}
					wr := math.Exp(st.lse[r][i] - st.L[i])
					var gO float64
					for d := range dh {
						gO += gi[d] * st.o[r][i][d]
					}
					dlse := wr * (gO - gOut) // through the round weights
					for j := range T {
						z := st.z[r][i*T+j]
						if math.IsInf(z, -1) {
							continue
						}
						pr := math.Exp(z - st.lse[r][i])
						var gv float64
						for d := range dh {
							gv += wr * gi[d] * (st.v[j][d] - st.o[r][i][d])
							dvh[j][d] += pr * wr * gi[d]
						}
						dz := pr*gv + pr*dlse
						for d := range dh {
							ds[i][d] += dz * scale * st.k[j][d]
							dk[j][d] += dz * scale * st.s[i][d]
						}
					}
				}
			}
			for t := range T {
				var nrm, kd float64
				for d := range dh {
					nrm += st.s[t][d] * st.s[t][d]
					kd += st.k[t][d] * dk[t][d]
				}
				nrm = math.Sqrt(nrm)
				for d := range dh {
					dqk[(b*T+t)*D+h*dh+d] = ds[t][d] + (dk[t][d]-st.k[t][d]*kd)/nrm
					dv[(b*T+t)*D+h*dh+d] = dvh[t][d]
				}
			}
		}
	}
	attn.RopeRef(dqk, p.B, p.T, D, dh, attn.RopeBase(m.rope), true)
	dx := make([]float64, n*D)
	linGrad(g[0], g[1], dqk, x, dx, tw.w[0])
	linGrad(g[2], g[3], dv, x, dx, tw.w[2])
	return dx, g
}
