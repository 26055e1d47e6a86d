package fft

import (
	"math"
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// maxRadix is the largest prime handled by a Stockham butterfly; lengths with
// a larger prime factor use Bluestein.
const maxRadix = 13

// Plan is a forward complex DFT of one length. It is read-only after
// NewPlan and safe for concurrent use.
type Plan[F kernels.Float] struct {
	n      int
	stages []stage[F]
	blue   *bluestein[F]
	// split is the four-step decomposition, built on first use (nil if n
	// is prime or not mixed radix).
	split     *fourStep[F]
	splitOnce sync.Once
}

// stage is one Stockham pass: radix p over sub-transforms of length p·m,
// with stride s between interleaved sequences.
type stage[F kernels.Float] struct {
	p, m, s  int
	twr, twi []F // [(p−1)·m]: W_{p·m}^{r·k} for r=1…p−1, k<m
	// twp [m][2(p−1)] interleaves (re, im) of W^{1·k}…W^{(p−1)·k} for
	// the assembly butterflies (radix 2, 4, 5 and 7).
	twp []F
	// cst [2h²] holds cos θ_rj then sin θ_rj (θ_rj = 2π·r·j/p, r, j =
	// 1…h, h = (p−1)/2, row r) for radixN and its radix-5 and radix-7
	// assembly (p > 4 only).
	cst []F
}

// bluestein holds the chirp and the transformed convolution kernel.
type bluestein[F kernels.Float] struct {
	m      int
	inner  *Plan[F]
	cr, ci []F // [n] chirp exp(−iπ·j²/n)
	br, bi []F // [m] FFT of the conjugate chirp, divided by m
}

// angle returns exp(−2πi·num/den) computed in float64 with num reduced
// mod den first.
func angle(num, den int) (float64, float64) {
	num %= den
	if num < 0 {
		num += den
	}
	// Use exact values on the axes so that small transforms are exact.
	switch {
	case num == 0:
		return 1, 0
	case 4*num == den:
		return 0, -1
	case 2*num == den:
		return -1, 0
	case 4*num == 3*den:
		return 0, 1
	}
	s, c := math.Sincos(-2 * math.Pi * float64(num) / float64(den))
	return c, s
}

// NewPlan returns a plan for the forward DFT of length n. NewPlan panics if
// n < 1.
func NewPlan[F kernels.Float](n int) *Plan[F] {
	if n < 1 {
		panic("fft: NewPlan with n < 1")
	}
	p := &Plan[F]{n: n}
	f := factor(n)
	if f == nil {
		p.blue = newBluestein[F](n)
		return p
	}
	ncur, s := n, 1
	for _, r := range f {
		m := ncur / r
		st := stage[F]{p: r, m: m, s: s}
		st.twr = make([]F, (r-1)*m)
		st.twi = make([]F, (r-1)*m)
		for q := 1; q < r; q++ {
			for k := 0; k < m; k++ {
				c, si := angle(q*k, ncur)
				st.twr[(q-1)*m+k], st.twi[(q-1)*m+k] = F(c), F(si)
			}
		}
		if r == 2 || r == 4 || r == 5 || r == 7 {
			st.twp = make([]F, 2*(r-1)*m)
			for k := 0; k < m; k++ {
				for q := 1; q < r; q++ {
					st.twp[2*(r-1)*k+2*(q-1)] = st.twr[(q-1)*m+k]
					st.twp[2*(r-1)*k+2*(q-1)+1] = st.twi[(q-1)*m+k]
				}
			}
		}
		if r > 4 {
			h := (r - 1) / 2
			st.cst = make([]F, 2*h*h)
			for q := 1; q <= h; q++ {
				for j := 1; j <= h; j++ {
					c, si := angle(q*j, r) // (cos θ, −sin θ)
					st.cst[(q-1)*h+j-1], st.cst[h*h+(q-1)*h+j-1] = F(c), F(-si)
				}
			}
		}
		p.stages = append(p.stages, st)
		ncur, s = m, s*r
	}
	return p
}

// factor splits n into radices 4, 2, 3, 5, 7, 11, 13 (fours first), or
// returns nil if n has a larger prime factor. factor(1) is empty.
func factor(n int) []int {
	f := []int{}
	for n%4 == 0 {
		f = append(f, 4)
		n /= 4
	}
	for _, r := range []int{2, 3, 5, 7, 11, 13} {
		for n%r == 0 {
			f = append(f, r)
			n /= r
		}
	}
	if n != 1 {
		return nil
	}
	return f
}

func newBluestein[F kernels.Float](n int) *bluestein[F] {
	m := 1
	for m < 2*n-1 {
		m *= 2
	}
	b := &bluestein[F]{m: m, inner: NewPlan[F](m)}
	b.cr, b.ci = make([]F, n), make([]F, n)
	br, bi := make([]F, m), make([]F, m)
	for j := 0; j < n; j++ {
		// exp(−iπ·j²/n) = exp(−2πi·(j² mod 2n)/(2n)).
		c, s := angle(j*j%(2*n), 2*n)
		b.cr[j], b.ci[j] = F(c), F(s)
		br[j], bi[j] = F(c), F(-s)
		if j > 0 {
			br[m-j], bi[m-j] = F(c), F(-s)
		}
	}
	scr := make([]F, 2*b.inner.ScratchLen())
	b.inner.Transform(br, bi, scr)
	inv := 1 / F(m)
	for i := range br {
		br[i] *= inv
		bi[i] *= inv
	}
	b.br, b.bi = br, bi
	return b
}

// Len returns the transform length.
func (p *Plan[F]) Len() int { return p.n }

// ScratchLen returns the number of elements Transform needs in scratch, per
// real and imaginary part (scratch must hold 2·ScratchLen()).
func (p *Plan[F]) ScratchLen() int {
	if p.blue != nil {
		return 2*p.blue.m + p.blue.inner.ScratchLen()
	}
	return p.n
}

// Transform replaces (re, im) with its forward DFT. scratch must have at
// least 2·ScratchLen() elements. Transform panics if re or im is shorter
// than Len() or scratch is too short.
func (p *Plan[F]) Transform(re, im, scratch []F) {
	n := p.n
	re, im = re[:n], im[:n]
	sl := p.ScratchLen()
	scratch = scratch[:2*sl]
	if p.blue != nil {
		p.blue.transform(re, im, scratch)
		return
	}
	p.stockham(re, im, scratch[:n], scratch[sl:sl+n], 1)
}

// stockham runs the Stockham stages on w interleaved sequences held in
// (re, im), ping-ponging through (yr, yi) of the same length n·w, and
// leaves the result in (re, im).
func (p *Plan[F]) stockham(re, im, yr, yi []F, w int) {
	xr, xi := p.stockhamAny(re, im, yr, yi, w)
	if &xr[0] != &re[0] {
		copy(re, xr)
		copy(im, xi)
	}
}

// stockhamAny is stockham without the final copy: it returns whichever of
// (re, im) and (yr, yi) holds the result.
func (p *Plan[F]) stockhamAny(re, im, yr, yi []F, w int) ([]F, []F) {
	xr, xi := re, im
	for i := range p.stages {
		st := &p.stages[i]
		s := st.s * w
		switch st.p {
		case 2:
			radix2(st, s, yr, yi, xr, xi)
		case 3:
			radix3(st, s, yr, yi, xr, xi)
		case 4:
			radix4(st, s, yr, yi, xr, xi)
		default:
			radixN(st, s, yr, yi, xr, xi)
		}
		xr, xi, yr, yi = yr, yi, xr, xi
	}
	return xr, xi
}

// BatchScratchLen returns the number of elements TransformBatch needs in
// scratch for w sequences, per real and imaginary part (scratch must hold
// 2·BatchScratchLen(w)).
func (p *Plan[F]) BatchScratchLen(w int) int {
	if p.blue != nil {
		return p.n + p.ScratchLen()
	}
	if fs := p.splitFor(w); fs != nil {
		return fs.scratchLen(w)
	}
	return p.n * w
}

// splitFor returns the four-step decomposition a batch of w sequences
// takes (n·w ≥ fourStepMinNW and n splits), or nil for the plain Stockham
// run.
func (p *Plan[F]) splitFor(w int) *fourStep[F] {
	if p.blue != nil || p.n*w < fourStepMinNW {
		return nil
	}
	return p.splitPlan()
}

// splitPlan returns the four-step decomposition, building it on first use,
// or nil if n does not split (prime, or not mixed radix).
func (p *Plan[F]) splitPlan() *fourStep[F] {
	p.splitOnce.Do(func() {
		if p.blue == nil {
			p.split = newFourStep[F](p.n)
		}
	})
	return p.split
}

// batchAny transforms the w sequences in (re, im) with the Stockham passes
// or, for long batches, the four-step path, and returns whichever of
// (re, im) and the first n·w elements of each scratch half holds the
// result. scratch holds 2·BatchScratchLen(w) elements; p is mixed radix.
func (p *Plan[F]) batchAny(re, im, scratch []F, w int) ([]F, []F) {
	sl := p.BatchScratchLen(w)
	if fs := p.splitFor(w); fs != nil {
		fs.transform(re, im, scratch[:sl], scratch[sl:2*sl], w)
		return re, im
	}
	N := p.n * w
	return p.stockhamAny(re, im, scratch[:N], scratch[sl:sl+N], w)
}

// TransformBatch replaces w interleaved sequences with their forward DFTs:
// element j of sequence q is (re[j·w+q], im[j·w+q]), j < Len(), q < w.
// Every Stockham pass then streams w contiguous elements per butterfly,
// which is what the vectorised (float32, AVX-512) butterflies need. Long
// batches (n·w ≥ fourStepMinNW, n composite and mixed radix) take the
// cache-blocked four-step path (see the package doc). scratch
// must have at least 2·BatchScratchLen(w) elements. TransformBatch panics if
// w < 1, if re or im is shorter than Len()·w, or if scratch is too short.
func (p *Plan[F]) TransformBatch(re, im []F, w int, scratch []F) {
	if w < 1 {
		panic("fft: TransformBatch with w < 1")
	}
	n := p.n
	N := n * w
	re, im = re[:N], im[:N]
	sl := p.BatchScratchLen(w)
	scratch = scratch[:2*sl]
	if p.blue != nil {
		// Bluestein: one sequence at a time through a gathered copy.
		gr, gi, inner := scratch[:n], scratch[n:2*n], scratch[2*n:]
		for q := 0; q < w; q++ {
			for j := 0; j < n; j++ {
				gr[j], gi[j] = re[j*w+q], im[j*w+q]
			}
			p.blue.transform(gr, gi, inner)
			for j := 0; j < n; j++ {
				re[j*w+q], im[j*w+q] = gr[j], gi[j]
			}
		}
		return
	}
	xr, xi := p.batchAny(re, im, scratch, w)
	if &xr[0] != &re[0] {
		copy(re, xr)
		copy(im, xi)
	}
}

func (b *bluestein[F]) transform(re, im, scratch []F) {
	n, m := len(re), b.m
	ar, ai := scratch[:m], scratch[m:2*m]
	inner := scratch[2*m:]
	for j := 0; j < n; j++ {
		xr, xi, cr, ci := re[j], im[j], b.cr[j], b.ci[j]
		ar[j], ai[j] = xr*cr-xi*ci, xr*ci+xi*cr
	}
	clear(ar[n:])
	clear(ai[n:])
	b.inner.Transform(ar, ai, inner)
	for k := 0; k < m; k++ {
		xr, xi, cr, ci := ar[k], ai[k], b.br[k], b.bi[k]
		// Multiply, then conjugate for the inverse-by-conjugation.
		ar[k], ai[k] = xr*cr-xi*ci, -(xr*ci + xi*cr)
	}
	b.inner.Transform(ar, ai, inner)
	for k := 0; k < n; k++ {
		xr, xi, cr, ci := ar[k], -ai[k], b.cr[k], b.ci[k]
		re[k], im[k] = xr*cr-xi*ci, xr*ci+xi*cr
	}
}

// The butterflies below compute, for k < m and q < s,
//
//	y[q + s·(p·k + r)] = W_{p·m}^{r·k} · Σ_j x[q + s·(k + j·m)]·W_p^{j·r},
//
// one decimation-in-frequency Stockham step.

func radix2[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	m := st.m
	if s%vecLanes == 0 && useAsm[F]() {
		radix2Asm(st, s, yr, yi, xr, xi)
		return
	}
	for k := 0; k < m; k++ {
		wr, wi := st.twr[k], st.twi[k]
		x0r, x0i := xr[s*k:s*k+s], xi[s*k:s*k+s]
		x1r, x1i := xr[s*(k+m):s*(k+m)+s], xi[s*(k+m):s*(k+m)+s]
		y0r, y0i := yr[s*2*k:s*2*k+s], yi[s*2*k:s*2*k+s]
		y1r, y1i := yr[s*(2*k+1):s*(2*k+1)+s], yi[s*(2*k+1):s*(2*k+1)+s]
		for q := range x0r {
			ar, ai, br, bi := x0r[q], x0i[q], x1r[q], x1i[q]
			y0r[q], y0i[q] = ar+br, ai+bi
			dr, di := ar-br, ai-bi
			y1r[q], y1i[q] = dr*wr-di*wi, dr*wi+di*wr
		}
	}
}

func radix3[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	const c3 = 0.86602540378443864676 // √3/2
	m := st.m
	for k := 0; k < m; k++ {
		w1r, w1i := st.twr[k], st.twi[k]
		w2r, w2i := st.twr[m+k], st.twi[m+k]
		x0r, x0i := xr[s*k:s*k+s], xi[s*k:s*k+s]
		x1r, x1i := xr[s*(k+m):s*(k+m)+s], xi[s*(k+m):s*(k+m)+s]
		x2r, x2i := xr[s*(k+2*m):s*(k+2*m)+s], xi[s*(k+2*m):s*(k+2*m)+s]
		o := s * 3 * k
		y0r, y0i := yr[o:o+s], yi[o:o+s]
		y1r, y1i := yr[o+s:o+2*s], yi[o+s:o+2*s]
		y2r, y2i := yr[o+2*s:o+3*s], yi[o+2*s:o+3*s]
		for q := range x0r {
			ar, ai := x0r[q], x0i[q]
			sr, si := x1r[q]+x2r[q], x1i[q]+x2i[q]
			dr, di := x1r[q]-x2r[q], x1i[q]-x2i[q]
			y0r[q], y0i[q] = ar+sr, ai+si
			mr, mi := ar-sr/2, ai-si/2
			b1r, b1i := mr+c3*di, mi-c3*dr
			b2r, b2i := mr-c3*di, mi+c3*dr
			y1r[q], y1i[q] = b1r*w1r-b1i*w1i, b1r*w1i+b1i*w1r
			y2r[q], y2i[q] = b2r*w2r-b2i*w2i, b2r*w2i+b2i*w2r
		}
	}
}

func radix4[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	m := st.m
	if s%vecLanes == 0 && useAsm[F]() {
		radix4Asm(st, s, yr, yi, xr, xi)
		return
	}
	if s < 8 {
		radix4Narrow(st, s, yr, yi, xr, xi)
		return
	}
	for k := 0; k < m; k++ {
		w1r, w1i := st.twr[k], st.twi[k]
		w2r, w2i := st.twr[m+k], st.twi[m+k]
		w3r, w3i := st.twr[2*m+k], st.twi[2*m+k]
		x0r, x0i := xr[s*k:s*k+s], xi[s*k:s*k+s]
		x1r, x1i := xr[s*(k+m):s*(k+m)+s], xi[s*(k+m):s*(k+m)+s]
		x2r, x2i := xr[s*(k+2*m):s*(k+2*m)+s], xi[s*(k+2*m):s*(k+2*m)+s]
		x3r, x3i := xr[s*(k+3*m):s*(k+3*m)+s], xi[s*(k+3*m):s*(k+3*m)+s]
		o := s * 4 * k
		y0r, y0i := yr[o:o+s], yi[o:o+s]
		y1r, y1i := yr[o+s:o+2*s], yi[o+s:o+2*s]
		y2r, y2i := yr[o+2*s:o+3*s], yi[o+2*s:o+3*s]
		y3r, y3i := yr[o+3*s:o+4*s], yi[o+3*s:o+4*s]
		for q := range x0r {
			t0r, t0i := x0r[q]+x2r[q], x0i[q]+x2i[q]
			t1r, t1i := x0r[q]-x2r[q], x0i[q]-x2i[q]
			t2r, t2i := x1r[q]+x3r[q], x1i[q]+x3i[q]
			t3r, t3i := x1r[q]-x3r[q], x1i[q]-x3i[q]
			y0r[q], y0i[q] = t0r+t2r, t0i+t2i
			b2r, b2i := t0r-t2r, t0i-t2i
			b1r, b1i := t1r+t3i, t1i-t3r // t1 − i·t3
			b3r, b3i := t1r-t3i, t1i+t3r // t1 + i·t3
			y1r[q], y1i[q] = b1r*w1r-b1i*w1i, b1r*w1i+b1i*w1r
			y2r[q], y2i[q] = b2r*w2r-b2i*w2i, b2r*w2i+b2i*w2r
			y3r[q], y3i[q] = b3r*w3r-b3i*w3i, b3r*w3i+b3i*w3r
		}
	}
}

// radix4Narrow is radix4 with k innermost, for the first stages where the
// stride s is too short for the q loop to pay for its slice set-up.
func radix4Narrow[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	m := st.m
	tw1r, tw1i := st.twr[:m], st.twi[:m]
	tw2r, tw2i := st.twr[m:2*m], st.twi[m:2*m]
	tw3r, tw3i := st.twr[2*m:3*m], st.twi[2*m:3*m]
	for q := 0; q < s; q++ {
		for k := 0; k < m; k++ {
			i := q + s*k
			x0r, x0i := xr[i], xi[i]
			x1r, x1i := xr[i+s*m], xi[i+s*m]
			x2r, x2i := xr[i+2*s*m], xi[i+2*s*m]
			x3r, x3i := xr[i+3*s*m], xi[i+3*s*m]
			t0r, t0i := x0r+x2r, x0i+x2i
			t1r, t1i := x0r-x2r, x0i-x2i
			t2r, t2i := x1r+x3r, x1i+x3i
			t3r, t3i := x1r-x3r, x1i-x3i
			b2r, b2i := t0r-t2r, t0i-t2i
			b1r, b1i := t1r+t3i, t1i-t3r
			b3r, b3i := t1r-t3i, t1i+t3r
			w1r, w1i, w2r, w2i, w3r, w3i := tw1r[k], tw1i[k], tw2r[k], tw2i[k], tw3r[k], tw3i[k]
			o := q + 4*s*k
			yr[o], yi[o] = t0r+t2r, t0i+t2i
			yr[o+s], yi[o+s] = b1r*w1r-b1i*w1i, b1r*w1i+b1i*w1r
			yr[o+2*s], yi[o+2*s] = b2r*w2r-b2i*w2i, b2r*w2i+b2i*w2r
			yr[o+3*s], yi[o+3*s] = b3r*w3r-b3i*w3i, b3r*w3i+b3i*w3r
		}
	}
}

// radixN is the butterfly for the odd primes p = 5, 7, 11, 13. It pairs
// inputs j and p−j: with θ = 2π·j·r/p, x_j·W^{jr} + x_{p−j}·W^{−jr} =
// a_j·cos θ − i·b_j·sin θ for a_j = x_j + x_{p−j}, b_j = x_j − x_{p−j}, so
// with A_r = x_0 + Σ_{j≤h} a_j·cos θ and B_r = Σ_{j≤h} b_j·sin θ
// (h = (p−1)/2), y_r = A_r − i·B_r and y_{p−r} = A_r + i·B_r: 2h² complex
// by real products per point instead of p². The q loop is innermost, so
// every input and output is walked contiguously.
func radixN[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	p, m := st.p, st.m
	if (p == 5 || p == 7) && s%vecLanes == 0 && useAsm[F]() {
		radixOddAsm(st, s, yr, yi, xr, xi)
		return
	}
	h := (p - 1) / 2
	cs, sn := st.cst[:h*h], st.cst[h*h:2*h*h] // [r−1][j−1] rows of h
	var ar, ai, br, bi [maxRadix / 2]F
	for k := 0; k < m; k++ {
		var w1r, w1i, w2r, w2i [maxRadix / 2]F // twiddles of outputs r and p−r
		for r := 1; r <= h; r++ {
			w1r[r-1], w1i[r-1] = st.twr[(r-1)*m+k], st.twi[(r-1)*m+k]
			w2r[r-1], w2i[r-1] = st.twr[(p-r-1)*m+k], st.twi[(p-r-1)*m+k]
		}
		in, out := s*k, s*p*k
		for q := 0; q < s; q++ {
			x0r, x0i := xr[in+q], xi[in+q]
			sr, si := x0r, x0i
			for j := 1; j <= h; j++ {
				u, v := in+q+s*j*m, in+q+s*(p-j)*m
				pr, pi, mr, mi := xr[u], xi[u], xr[v], xi[v]
				ar[j-1], ai[j-1] = pr+mr, pi+mi
				br[j-1], bi[j-1] = pr-mr, pi-mi
				sr += pr + mr
				si += pi + mi
			}
			yr[out+q], yi[out+q] = sr, si
			for r := 1; r <= h; r++ {
				Ar, Ai := x0r, x0i
				var Br, Bi F
				c, sv := cs[(r-1)*h:r*h], sn[(r-1)*h:r*h]
				for j := 0; j < h; j++ {
					Ar += ar[j] * c[j]
					Ai += ai[j] * c[j]
					Br += br[j] * sv[j]
					Bi += bi[j] * sv[j]
				}
				// y_r = A − i·B, y_{p−r} = A + i·B, then the twiddles.
				y1r, y1i := Ar+Bi, Ai-Br
				y2r, y2i := Ar-Bi, Ai+Br
				o1, o2 := out+q+r*s, out+q+(p-r)*s
				yr[o1], yi[o1] = y1r*w1r[r-1]-y1i*w1i[r-1], y1r*w1i[r-1]+y1i*w1r[r-1]
				yr[o2], yi[o2] = y2r*w2r[r-1]-y2i*w2i[r-1], y2r*w2i[r-1]+y2i*w2r[r-1]
			}
		}
	}
}

// Real2 computes the half spectra k = 0…n/2 of two real sequences x1 and
// x2 of length n = Len() with one complex transform of x1 + i·x2, writing
// X1 to (r1, i1) and X2 to (r2, i2), each of length n/2+1. The other half
// follows from X[n−k] = conj(X[k]). scratch must hold 2·ScratchLen() + 2·n
// elements. Real2 panics if a slice is too short.
func (p *Plan[F]) Real2(r1, i1, r2, i2, x1, x2, scratch []F) {
	n := p.n
	h := n/2 + 1
	r1, i1, r2, i2 = r1[:h], i1[:h], r2[:h], i2[:h]
	zr, zi := scratch[:n], scratch[n:2*n]
	copy(zr, x1[:n])
	copy(zi, x2[:n])
	p.Transform(zr, zi, scratch[2*n:])
	for k := 0; k < h; k++ {
		nk := (n - k) % n
		ar, ai := zr[k], zi[k]
		br, bi := zr[nk], -zi[nk] // conj(Z[n−k])
		// X1 = (Z[k] + conj Z[n−k])/2, X2 = (Z[k] − conj Z[n−k])/(2i).
		r1[k], i1[k] = (ar+br)/2, (ai+bi)/2
		r2[k], i2[k] = (ai-bi)/2, -(ar-br)/2
	}
}

// Real2ScratchLen is the scratch Real2 needs.
func (p *Plan[F]) Real2ScratchLen() int { return 2*p.ScratchLen() + 2*p.n }

var cache sync.Map // planKey → *Plan[F]

type planKey struct {
	n    int
	f64  bool
	kind string
}

// PlanFor returns the cached plan of length n for element type F, building
// it on first use. PlanFor panics if n < 1.
func PlanFor[F kernels.Float](n int) *Plan[F] {
	var zero F
	_, f64 := any(zero).(float64)
	k := planKey{n: n, f64: f64, kind: "c"}
	if v, ok := cache.Load(k); ok {
		return v.(*Plan[F])
	}
	v, _ := cache.LoadOrStore(k, NewPlan[F](n))
	return v.(*Plan[F])
}

// Twiddle returns (cos, sin) of −2π·num/den, that is exp(−2πi·num/den),
// computed in float64 with num reduced mod den first, so large index
// products lose no accuracy. Twiddle panics if den < 1.
func Twiddle(num, den int) (float64, float64) {
	if den < 1 {
		panic("fft: Twiddle with den < 1")
	}
	return angle(num, den)
}
