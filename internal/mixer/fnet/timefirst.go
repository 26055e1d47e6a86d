package fnet

import (
	"sync"
	"sync/atomic"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/kernels/fft"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// outChunk is the number of time frequencies t (each with its mirror T−t)
// one thread combines, multiplies and writes at a time in the time-first
// output pass: its [outChunk, D/2+1] buffers stay in that thread's cache.
const outChunk = 256

// halfTrig holds the folded channel matrices of the time-first path, halved:
// c [nk, nk] = C_D[j, c]/2 for j, c < nk = D/2+1, and
// s [ns, ns] = S_D[1+j, 1+c]/2 for j, c < ns = (D−1)/2; n [nk] is c's last
// column, C_D[j, D/2]/2 = (−1)^j/2 for even D.
type halfTrig[F kernels.Float] struct{ c, s, n []F }

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
	h := &halfTrig[F]{c: make([]F, nk*nk), s: make([]F, ns*ns), n: make([]F, nk)}
	for j := 0; j < nk; j++ {
		for c := 0; c < nk; c++ {
			h.c[j*nk+c] = td.c[j*D+c] / 2
		}
		h.n[j] = h.c[j*nk+nk-1]
	}
	for j := 0; j < ns; j++ {
		for c := 0; c < ns; c++ {
			h.s[j*ns+c] = td.s[(1+j)*D+1+c] / 2
		}
	}
	v, _ := halfCache.LoadOrStore(k, h)
	return v.(*halfTrig[F])
}

// rowPrefetch is how many row pairs ahead the output pass prefetches the
// rows t and T−t of y it reads next and the rows of dst it writes or adds
// to: they are whole rows, so at long T a new 4 KiB page starts every few
// rows, where hardware prefetchers stop. It matters most for the
// accumulating backward, which reads dst as well as writing it.
var rowPrefetch = 4

// tfWorkerSize is one thread's work space in the time-first path: the
// larger of the output pass's chunk buffers (Ce and U, V [outChunk, nk],
// So [outChunk, nz]) and one column block's time transform: for even T its
// packed input [T/2, colBlock] (real and imaginary), foldPack's rows and
// the transform's scratch; for odd T the folded block [T, colBlock] and
// its scratch.
func (f *FNet[F]) tfWorkerSize(T int) int {
	D := f.D
	w := min(colBlock, zCols(D))
	ws := outChunk * (3*(D/2+1) + zCols(D))
	if T%2 == 0 {
		return max(ws, T*w+8*w+fft.RealPlanFor[F](T).PackedScratchLen(w))
	}
	return max(ws, 2*T*w+2*fft.PlanFor[F](T).BatchScratchLen(w))
}

// applyTimeFirst is the time-first FFT path (see the package doc). Each
// thread takes one block of colBlock channel pairs of x, z = Xe + i·Xo
// with Xe = x[c] + x[D−c] and Xo = x[c] − x[D−c] (for even T folded
// straight into the packed input of the half-length transform, foldPack;
// for odd T into its work space, foldBlock), and writes
// y = Re(FFT_time z) = C_T·Xe + S_T·Xo into the block's columns of
// y [B·T, ld]; for even D the Nyquist channel x[D/2]
// gets a column of its own. Then, for each t ≤ T/2, rows t and T−t of y
// give 2·C_T·Xe (even in t) and 2·S_T·Xo (odd in t), which are multiplied
// by the halved folded channel matrices (U = Ce·C_D/2, V = So·S_D/2: half
// the rows and half the columns of the channel-first GEMM), and rows t and
// T−t of dst are written (or added): out[t, c] = out[T−t, D−c] = U − V and
// out[t, D−c] = out[T−t, c] = U + V.
func (f *FNet[F]) applyTimeFirst(th int, dst, scratch, src []F, B, T int, acc bool) {
	D := f.D
	nk, ns, nz, ld := D/2+1, (D-1)/2, zCols(D), zStride(D)
	y := scratch[:B*T*ld]
	var nyq, zero []F
	if D%2 == 0 {
		nyq = scratch[B*T*ld : B*T*ld+B*T]
		zero = scratch[B*T*ld+B*T : B*T*ld+B*T+T]
		clear(zero)
	}
	ws := f.tfWorkerSize(T)
	work := scratch[B*T*ld+nyqSize(D, B, T):]
	if len(work) < th*ws {
		panic("fnet: scratch smaller than ScratchSize (Pass.Threads above its?)")
	}
	rp, pt := timePlans[F](T)
	ncb, items := timeItems(B, nz, nyq != nil)
	// Items are taken dynamically, the Nyquist columns (about half a
	// block's time at T=16384) last: a static split of d=256's 8 blocks and
	// one Nyquist column over 2 threads would give one thread 5 blocks.
	var next atomic.Int64
	parallel.For(th, min(th, items), 1, func(wk, _, _ int) {
		fs := work[wk*ws : (wk+1)*ws]
		for {
			i := int(next.Add(1) - 1)
			if i >= items {
				return
			}
			if i >= B*ncb {
				b := i - B*ncb
				nb, xb := nyq[b*T:(b+1)*T], src[b*T*D:(b+1)*T*D]
				for t := range nb {
					nb[t] = xb[t*D+D/2]
				}
				nyqTime(nb, zero, rp, pt, fs)
				continue
			}
			b, k0 := i/ncb, (i%ncb)*colBlock
			w := min(k0+colBlock, nz) - k0
			yb := y[b*T*ld : (b+1)*T*ld]
			if rp != nil {
				// Even T: only Re(FFT_time) is needed, which a
				// half-length transform gives (even and odd rows); the
				// block is folded and packed for it in one pass.
				M := T / 2
				pr, pi := fs[:M*w], fs[M*w:2*M*w]
				c, s := rp.PackTwiddles()
				foldPack(pr, pi, src[b*T*D:(b+1)*T*D], D, T, k0, w, c, s, fs[2*M*w:2*M*w+8*w])
				rp.BatchPacked(yb[k0:], yb[ld+k0:], 2*ld, pr, pi, w, fs[2*M*w+8*w:])
				continue
			}
			er, ei := fs[:T*w], fs[T*w:2*T*w]
			foldBlock(er, ei, src[b*T*D:(b+1)*T*D], D, T, k0, w)
			pt.TransformBatch(er, ei, w, fs[2*T*w:])
			for t := 0; t < T; t++ {
				copy(yb[t*ld+k0:t*ld+k0+w], er[t*w:(t+1)*w])
			}
		}
	})
	ht := halfTrigFor[F](D)
	np := T/2 + 1
	// Chunks of at most outChunk rows, a multiple of the thread count of
	// them, so that the threads get equal shares.
	nch := (np + outChunk - 1) / outChunk
	if B*nch%th != 0 {
		nch = min(np, ((B*nch+th-1)/th*th+B-1)/B)
	}
	rows := (np + nch - 1) / nch
	nch = (np + rows - 1) / rows
	pf := rowPrefetch
	if !useSymAsm[F]() {
		pf = 0 // prefetchLines counts float32 cache lines
	}
	parallel.For(th, B*nch, 1, func(wk, lo, hi int) {
		fs := work[wk*ws : (wk+1)*ws]
		for i := lo; i < hi; i++ {
			b, t0 := i/nch, (i%nch)*rows
			m := min(t0+rows, np) - t0
			ce := fs[:m*nk]                    // [m, nk]: 2·C_T·Xe
			so := fs[m*nk : m*(nk+nz)]         // [m, nz]: 2·S_T·Xo (column 0 unused)
			u := fs[m*(nk+nz) : m*(2*nk+nz)]   // [m, nk]
			v := fs[m*(2*nk+nz) : m*(3*nk+nz)] // [m, nk]: column 0 (and D/2) zero
			for j := 0; j < m; j++ {
				t := t0 + j
				r, rm := b*T+t, b*T+(T-t)%T
				if pf > 0 && t > 0 && t+pf < T-t-pf {
					prefetchLines(p32(y[(r+pf)*ld:]), ld/16)
					prefetchLines(p32(y[(rm-pf)*ld:]), ld/16)
				}
				sumDiff(ce[j*nk:j*nk+nz], so[j*nz:(j+1)*nz], y[r*ld:r*ld+nz], y[rm*ld:rm*ld+nz])
				v[j*nk] = 0
				if nyq != nil {
					ce[j*nk+nk-1] = nyq[r] + nyq[rm]
					v[j*nk+nk-1] = 0
				}
			}
			// For even D, output column D/2 of U is a dot product per row
			// rather than a one-column tile of the GEMM (at D=256 the GEMM
			// is then exactly 128 columns wide).
			kernels.Gemm(1, kernels.PrecFP32, false, false, m, nz, nk, 1, ce, nk, ht.c, nk, 0, u, nk)
			if nz < nk {
				for j := 0; j < m; j++ {
					u[j*nk+nk-1] = kernels.Dot(ce[j*nk:(j+1)*nk], ht.n)
				}
			}
			if ns > 0 {
				kernels.Gemm(1, kernels.PrecFP32, false, false, m, ns, ns, 1, so[1:], nz, ht.s, ns, 0, v[1:], nk)
			}
			for j := 0; j < m; j++ {
				t := t0 + j
				r, rm := b*T+t, b*T+(T-t)%T
				uj, vj := u[j*nk:(j+1)*nk], v[j*nk:(j+1)*nk]
				sumDiff(uj, vj, uj, vj) // uj = U + V, vj = U − V
				if pf > 0 && t > 0 && t+pf < T-t-pf {
					prefetchLines(p32(dst[(r+pf)*D:]), (D+15)/16)
					prefetchLines(p32(dst[(rm-pf)*D:]), (D+15)/16)
				}
				unfoldRow(dst[r*D:(r+1)*D], vj, uj, vj[nk-1], acc)
				if rm != r {
					unfoldRow(dst[rm*D:(rm+1)*D], uj, vj, uj[nk-1], acc)
				}
			}
		}
	})
}
