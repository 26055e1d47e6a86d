package attn

import (
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Gathered keys. A layout may list key positions in Gather (for the Sparse
// Transformer's fixed pattern: the c summary positions at the end of every
// block of l). Blocks marked Gathered index that list, so a run of 64
// summary keys from many blocks is one dense tile. The kernels copy the
// listed rows of k and v into compact per-head buffers (and their
// transposes) once per pass, and backward accumulates their gradients there
// and adds them back to dk and dv: O(len(Gather)·D) extra work and memory.

// Gatherer is implemented by patterns whose layouts use a Gather list.
type Gatherer interface {
	// GatherLen bounds len(Layout.Gather) over the heads at length T.
	GatherLen(T int) int
}

// gbuf holds the gathered copies for one pass: n rows per head.
type gbuf[F kernels.Float] struct {
	n            int
	k, v, dk, dv []F // [B,H,n,Dh]
	kt, vt       []F // [B,H,Dh,n+16]
}

func gbufSize(b, h, dh, n int) int {
	if n == 0 {
		return 0
	}
	return b * h * (4*n*dh + 2*dh*(n+16))
}

func newGBuf[F kernels.Float](buf []F, b, h, dh, n int) gbuf[F] {
	g := gbuf[F]{n: n}
	if n == 0 {
		return g
	}
	r, t := b*h*n*dh, b*h*dh*(n+16)
	g.k, g.v, g.dk, g.dv = buf[:r], buf[r:2*r], buf[2*r:3*r], buf[3*r:4*r]
	g.kt, g.vt = buf[4*r:4*r+t], buf[4*r+t:4*r+2*t]
	return g
}

// fill copies the listed rows of k and v [B,T,D] for every head whose layout
// has a Gather list, and transposes them.
func (g gbuf[F]) fill(k, v []F, d dims, lay []*Layout) {
	if g.n == 0 {
		return
	}
	B, T, D, H, Dh := d.B, d.T, d.D, d.H, d.Dh
	ld := g.n + 16
	parallel.For(d.threads, B*H, 1, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			b, h := u/H, u%H
			gl := lay[h].Gather
			if len(gl) > g.n {
				panic("attn: gather list longer than GatherLen")
			}
			gk, gv := g.k[u*g.n*Dh:(u+1)*g.n*Dh], g.v[u*g.n*Dh:(u+1)*g.n*Dh]
			kt, vt := g.kt[u*Dh*ld:(u+1)*Dh*ld], g.vt[u*Dh*ld:(u+1)*Dh*ld]
			for r, j := range gl {
				src := (b*T+j)*D + h*Dh
				copy(gk[r*Dh:(r+1)*Dh], k[src:src+Dh])
				copy(gv[r*Dh:(r+1)*Dh], v[src:src+Dh])
				for c := 0; c < Dh; c++ {
					kt[c*ld+r] = k[src+c]
					vt[c*ld+r] = v[src+c]
				}
			}
		}
	})
}

// clearGrads zeroes the gathered gradient rows of sequence b, head h.
func (g gbuf[F]) clearGrads(d dims, b, h int) {
	if g.n == 0 {
		return
	}
	u := b*d.H + h
	clear(g.dk[u*g.n*d.Dh : (u+1)*g.n*d.Dh])
	clear(g.dv[u*g.n*d.Dh : (u+1)*g.n*d.Dh])
}

// scatter adds the gathered gradient rows of sequence b, head h into dk and
// dv [B,T,D].
func (g gbuf[F]) scatter(dk, dv []F, gl []int, d dims, b, h int) {
	u := b*d.H + h
	for r, j := range gl {
		dst := (b*d.T+j)*d.D + h*d.Dh
		kernels.AddTo(1, dk[dst:dst+d.Dh], g.dk[(u*g.n+r)*d.Dh:(u*g.n+r+1)*d.Dh])
		kernels.AddTo(1, dv[dst:dst+d.Dh], g.dv[(u*g.n+r)*d.Dh:(u*g.n+r+1)*d.Dh])
	}
}
