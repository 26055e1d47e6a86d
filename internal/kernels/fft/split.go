package fft

import "github.com/tokenmix/tokenmix/internal/kernels"

// quarterMinNW is the smallest n·w (complex elements per batch) for which
// RealPlan.Batch splits its half-length transform into quarters (see
// quarters). Below it a batch and its Stockham ping-pong copy fit in L2
// (w = 16 float32 at n = 4096 is 512 KiB each way), where splitting gains
// nothing. Tests lower it to force the path.
var quarterMinNW = 1 << 16

// quarters reports whether a batch of w sequences of p takes the radix-4
// split: p is a plain mixed-radix plan whose first Stockham stage is
// radix 4, n·w ≥ quarterMinNW, and the batch does not take the four-step
// path (which then has priority; a quarter, being shorter, never takes it).
//
// The split is one decimation-in-frequency radix-4 pass over the whole
// batch, written back in place with each output r in its own contiguous
// quarter, u_r[k] = W_n^{r·k}·Σ_j x[k + j·n/4]·(−i)^{j·r} (k < n/4), then
// four independent transforms of length n/4: X[4k + r] = DFT_{n/4}(u_r)[k].
// Each quarter's Stockham passes (and their ping-pong copy) touch a fourth
// of the batch, so at long n they run from L2 rather than from L3; the
// outputs come out interleaved by 4, which a caller that scatters its rows
// anyway (RealPlan.Batch) absorbs in the row stride.
func (p *Plan[F]) quarters(w int) bool {
	return p.blue == nil && p.n*w >= quarterMinNW && p.n%4 == 0 && p.n >= 16 &&
		len(p.stages) > 1 && p.stages[0].p == 4 && p.splitFor(w) == nil
}

// splitPass is the split's in-place radix-4 pass over the w sequences in
// (re, im): with m = n/4, element k of quarter r (re[(r·m + k)·w + q]) is
// set to W_n^{r·k}·Σ_j x[k + j·m]·(−i)^{j·r}. The twiddles are those of
// the first Stockham stage (s = 1, m = n/4).
func (p *Plan[F]) splitPass(re, im []F, w int) {
	st := &p.stages[0]
	m := st.m
	N := 4 * m * w
	re, im = re[:N], im[:N]
	if w == vecLanes && useAsm[F]() {
		_ = st.twp[6*m-1]
		radix4SplitAVX512(ptr32(re), ptr32(im), ptr32(re), ptr32(im), ptr32(st.twp), m)
		return
	}
	for k := 0; k < m; k++ {
		w1r, w1i := st.twr[k], st.twi[k]
		w2r, w2i := st.twr[m+k], st.twi[m+k]
		w3r, w3i := st.twr[2*m+k], st.twi[2*m+k]
		for q := 0; q < w; q++ {
			i0, i1, i2, i3 := k*w+q, (m+k)*w+q, (2*m+k)*w+q, (3*m+k)*w+q
			t0r, t0i := re[i0]+re[i2], im[i0]+im[i2]
			t1r, t1i := re[i0]-re[i2], im[i0]-im[i2]
			t2r, t2i := re[i1]+re[i3], im[i1]+im[i3]
			t3r, t3i := re[i1]-re[i3], im[i1]-im[i3]
			re[i0], im[i0] = t0r+t2r, t0i+t2i
			b2r, b2i := t0r-t2r, t0i-t2i
			b1r, b1i := t1r+t3i, t1i-t3r // t1 − i·t3
			b3r, b3i := t1r-t3i, t1i+t3r // t1 + i·t3
			re[i1], im[i1] = b1r*w1r-b1i*w1i, b1r*w1i+b1i*w1r
			re[i2], im[i2] = b2r*w2r-b2i*w2i, b2r*w2i+b2i*w2r
			re[i3], im[i3] = b3r*w3r-b3i*w3i, b3r*w3i+b3i*w3r
		}
	}
}

// quarterBatch runs the split on the w sequences in (re, im) (p.quarters(w)
// holds; they are overwritten) and returns where the quarters' results
// are: X[4k + r] is at (xr, xi)[r·qs + k·w …], k < n/4. scratch holds
// 2·BatchScratchLen(w) elements, four times what a quarter's plain passes
// need. With an even number of passes each quarter's result is back in
// place, and all quarters ping-pong with the same fourth of the scratch
// (still cached from the quarter before); with an odd number each
// quarter's result is in its own fourth, so that all quarters end in the
// same place.
func (p *Plan[F]) quarterBatch(re, im, scratch []F, w int) (xr, xi []F, qs int) {
	p.splitPass(re, im, w)
	m := p.n / 4
	sub := PlanFor[F](m)
	mw := m * w
	shared := len(sub.stages)%2 == 0 // results in place
	for r := 0; r < 4; r++ {
		sc := scratch[r*2*mw : (r+1)*2*mw]
		if shared {
			sc = scratch[:2*mw]
		}
		sr, si := sub.batchAny(re[r*mw:(r+1)*mw], im[r*mw:(r+1)*mw], sc, w)
		if r == 0 {
			xr, xi, qs = sr, si, mw
			if &sr[0] != &re[0] {
				qs = 2 * mw // sr is scratch[:mw], si scratch[mw:2mw]
			}
		}
	}
	return xr[:3*qs+mw], xi[:3*qs+mw], qs
}

// interleave4 writes rows 4k+r (stride ds) of dr and di from row k of
// quarter r of sr and si (quarters qs apart, rows of w), for k < rows,
// r < 4.
func interleave4[F kernels.Float](dr, di, sr, si []F, w, rows, ds, qs int) {
	if rows < 1 {
		return
	}
	last := 4*rows - 1
	_, _ = dr[last*ds+w-1], di[last*ds+w-1]
	_, _ = sr[3*qs+rows*w-1], si[3*qs+rows*w-1]
	if w == vecLanes && useAsm[F]() {
		interleave4AVX512(ptr32(dr), ptr32(di), ptr32(sr), ptr32(si), rows, ds, qs)
		return
	}
	for k := 0; k < rows; k++ {
		for r := 0; r < 4; r++ {
			d, s := (4*k+r)*ds, r*qs+k*w
			copy(dr[d:d+w], sr[s:s+w])
			copy(di[d:d+w], si[s:s+w])
		}
	}
}
