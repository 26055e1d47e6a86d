package fnet

import (
	"sync"

	"tokenmix/kernels"
	"tokenmix/parallel"
)

// outChunk is the number of time frequencies t (each with its mirror T−t)
// one thread combines, multiplies and writes at a time in the time-first
// output pass: its [outChunk, D/2+1] buffers stay in that thread's cache.
const outChunk = 64

// halfTrig holds the folded channel matrices of the time-first path, halved:
// c [nk, nk] = C_D[j, c]/2 for j, c < nk = D/2+1, and
// s [ns, ns] = S_D[1+j, 1+c]/2 for j, c < ns = (D−1)/2.
type halfTrig[F kernels.Float] struct{ c, s []F }

var halfCache sync.Map // trigKey → *halfTrig[F]

// halfTrigFor returns the cached halved folded channel matrices for D.
func halfTrigFor[F kernels.Float](D int) *halfTrig[F] {
	var zero F
	_, f64 := any(zero).(float64)
	k := trigKey{D, f64}
	if v, ok := halfCache.Load(k); ok {
		return v.(*halfTrig[F])
	}
	td := trigFor[F](D)
	nk, ns := D/2+1, (D-1)/2
	h := &halfTrig[F]{c: make([]F, nk*nk), s: make([]F, ns*ns)}
	for j := 0; j < nk; j++ {
		for c := 0; c < nk; c++ {
			h.c[j*nk+c] = td.c[j*D+c] / 2
		}
	}
	for j := 0; j < ns; j++ {
		for c := 0; c < ns; c++ {
			h.s[j*ns+c] = td.s[(1+j)*D+1+c] / 2
		}
	}
	v, _ := halfCache.LoadOrStore(k, h)
	return v.(*halfTrig[F])
}

// tfChunkSize is one thread's buffers in the time-first output pass:
// Ce and U, V [outChunk, nk] and So [outChunk, nz].
func tfChunkSize(D int) int {
	return outChunk * (3*(D/2+1) + zCols(D))
}

// applyTimeFirst is the time-first FFT path (see the package doc): fold the
// channels of every row (Xe = x[c] + x[D−c], Xo = x[c] − x[D−c]) into the
// complex columns z = Xe + i·Xo of Z [B·T, ld] (the Nyquist channel x[D/2]
// of even D into its own column), replace them with
// y = Re(FFT_time z) = C_T·Xe + S_T·Xo, then for each t ≤ T/2 recover
// 2·C_T·Xe and 2·S_T·Xo from rows t and T−t (even and odd in t), multiply
// by the halved folded channel matrices (U = Ce·C_D/2, V = So·S_D/2: half
// the rows and half the columns of the channel-first GEMM) and write rows
// t and T−t of dst: out[t, c] = out[T−t, D−c] = U − V and
// out[t, D−c] = out[T−t, c] = U + V.
func (f *FNet[F]) applyTimeFirst(dst, scratch, src []F, B, T int, acc bool) {
	D := f.D
	nk, ns, nz, ld := D/2+1, (D-1)/2, zCols(D), zStride(D)
	zr := scratch[:B*T*ld]
	zi := scratch[B*T*ld : 2*B*T*ld]
	var nyq, zero []F
	if D%2 == 0 {
		nyq = scratch[2*B*T*ld : 2*B*T*ld+B*T]
		zero = scratch[2*B*T*ld+B*T : 2*B*T*ld+B*T+T]
		clear(zero)
	}
	ws := f.workerSize(T)
	work := scratch[2*B*T*ld+nyqSize(D, B, T):]
	if len(work) < parallel.Threads()*ws {
		panic("fnet: scratch smaller than ScratchSize (threads raised since?)")
	}
	// Fold: one streaming pass over x.
	parallel.For(B*T, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			xn := foldRowTF(zr[r*ld:r*ld+nz], zi[r*ld:r*ld+nz], src[r*D:(r+1)*D])
			if nyq != nil {
				nyq[r] = xn
			}
		}
	})
	timePass(zr, zi, nyq, zero, work, B, T, ld, nz, ws)
	ht := halfTrigFor[F](D)
	np := T/2 + 1
	nch := (np + outChunk - 1) / outChunk
	parallel.For(B*nch, 1, func(w, lo, hi int) {
		fs := work[w*ws : (w+1)*ws]
		for i := lo; i < hi; i++ {
			b, t0 := i/nch, (i%nch)*outChunk
			m := min(t0+outChunk, np) - t0
			ce := fs[:m*nk]                    // [m, nk]: 2·C_T·Xe
			so := fs[m*nk : m*(nk+nz)]         // [m, nz]: 2·S_T·Xo (column 0 unused)
			u := fs[m*(nk+nz) : m*(2*nk+nz)]   // [m, nk]
			v := fs[m*(2*nk+nz) : m*(3*nk+nz)] // [m, nk]: column 0 (and D/2) zero
			for j := 0; j < m; j++ {
				t := t0 + j
				r, rm := b*T+t, b*T+(T-t)%T
				sumDiff(ce[j*nk:j*nk+nz], so[j*nz:(j+1)*nz], zr[r*ld:r*ld+nz], zr[rm*ld:rm*ld+nz])
				if nyq != nil {
					ce[j*nk+nk-1] = nyq[r] + nyq[rm]
				}
				v[j*nk] = 0
				if nyq != nil {
					v[j*nk+nk-1] = 0
				}
			}
			kernels.GemmST(false, false, m, nk, nk, 1, ce, nk, ht.c, nk, 0, u, nk)
			if ns > 0 {
				kernels.GemmST(false, false, m, ns, ns, 1, so[1:], nz, ht.s, ns, 0, v[1:], nk)
			}
			for j := 0; j < m; j++ {
				t := t0 + j
				r, rm := b*T+t, b*T+(T-t)%T
				uj, vj := u[j*nk:(j+1)*nk], v[j*nk:(j+1)*nk]
				sumDiff(uj, vj, uj, vj) // uj = U + V, vj = U − V
				unfoldRow(dst[r*D:(r+1)*D], vj, uj, vj[nk-1], acc)
				if rm != r {
					unfoldRow(dst[rm*D:(rm+1)*D], uj, vj, uj[nk-1], acc)
				}
			}
		}
	})
}
