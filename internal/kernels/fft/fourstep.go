package fft

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// fourStepMinNW is the smallest n·w (complex elements per batch) for which
// TransformBatch and RealPlan.Batch take the cache-blocked four-step path
// when the plan has one. It is off (math.MaxInt): with a 1 MiB L2 per core
// the plain Stockham passes run from L2/L3 at nearly the speed of the
// blocked ones, and the four-step's extra gather, twiddle and scatter
// passes cost more than the blocking saves, except at lengths whose odd
// pass count costs the plain run a copy back. To retune, compare the paths
// with `go test -run X -bench 'RealBatchAB|^BenchmarkBatch$'
// ./internal/kernels/fft/`, with and without TOKENMIX_THREADS=1, and set it
// (e.g. to 1<<16) where the four-step shows a gain. Tests lower it to force
// the path.
var fourStepMinNW = math.MaxInt

// slabFloats is the target width, in elements, of one column slab of the
// four-step's first step: n1 rows of slabFloats complex elements and their
// ping-pong copy (n1·slabFloats·16 bytes for float32) stay in L2.
const slabFloats = 64

// slabElems caps n1·c, the complex elements of one slab, so that a slab
// and its ping-pong copy stay within 256 KiB of float32 (wide slabs for
// short n1, narrower ones for long n1).
const slabElems = 16384

// maxN2 caps the step-2 length n2: a row of n2·w complex elements and its
// ping-pong copy then stay in L1 for w = 16 (32 KiB of float32).
const maxN2 = 64

// rowGroup is the number of step-2 rows transformed before they are
// scattered together: their outputs k1 … k1+rowGroup−1 (for each k2) are
// consecutive, so the scattered writes come in runs of rowGroup rows.
const rowGroup = 8

// fourStep is the cache-blocked decomposition n = n1·n2 of a Plan. With
// j = j1·n2 + j2 and k = k1 + n1·k2,
//
//	X[k1 + n1·k2] = Σ_{j2} W_{n2}^{j2·k2} · W_n^{j2·k1} · Σ_{j1} x[j1·n2 + j2]·W_{n1}^{j1·k1}.
type fourStep[F kernels.Float] struct {
	n1, n2 int
	p1, p2 *Plan[F] // lengths n1 and n2, both mixed radix
	// tw [n1][n2] interleaves (re, im) of W_n^{j2·k1} at 2(k1·n2 + j2).
	tw []F
}

// newFourStep returns the decomposition of a mixed-radix length n into
// n2 ≤ n1, n2 the largest divisor of n with n2² ≤ n and n2 ≤ maxN2, or nil
// if there is none with n2 ≥ 2.
func newFourStep[F kernels.Float](n int) *fourStep[F] {
	n2 := 1
	for d := 2; d*d <= n && d <= maxN2; d++ {
		if n%d == 0 {
			n2 = d
		}
	}
	if n2 < 2 {
		return nil
	}
	return newFourStepN2[F](n, n2)
}

// newFourStepN2 returns the decomposition n = (n/n2)·n2; n2 divides the
// mixed-radix length n.
func newFourStepN2[F kernels.Float](n, n2 int) *fourStep[F] {
	n1 := n / n2
	fs := &fourStep[F]{n1: n1, n2: n2, p1: PlanFor[F](n1), p2: PlanFor[F](n2), tw: make([]F, 2*n)}
	for k1 := 0; k1 < n1; k1++ {
		for j2 := 0; j2 < n2; j2++ {
			c, s := angle(j2*k1, n)
			fs.tw[2*(k1*n2+j2)], fs.tw[2*(k1*n2+j2)+1] = F(c), F(s)
		}
	}
	return fs
}

// slab returns the number g of j2 values per column slab for width w and
// the slab width c = g·w.
func (fs *fourStep[F]) slab(w int) (g, c int) {
	g = max(1, min(fs.n2, min(slabFloats, slabElems/fs.n1)/w))
	return g, g * w
}

// scratchLen is the scratch the four-step needs per part (real and
// imaginary) for w sequences: the intermediate [n, w], two slabs [n1, c]
// and rowGroup rows [n2, w], rows padded by rowPad.
func (fs *fourStep[F]) scratchLen(w int) int {
	_, c := fs.slab(w)
	yrow := fs.n2*w + rowPad
	return fs.n1*yrow + 2*fs.n1*c + rowGroup*yrow
}

// rowPad pads the rows of the intermediate Y: with power-of-two lengths
// a row of n2·w elements is a multiple of 4 KiB, and the slab writes down
// a column of Y would all fall into the same few cache sets.
const rowPad = 16

// transform replaces the w interleaved sequences in (re, im), each of length
// n1·n2, with their DFTs. scr and sci each hold scratchLen(w) elements.
func (fs *fourStep[F]) transform(re, im, scr, sci []F, w int) {
	n1 := fs.n1
	fs.run(scr, sci, w,
		func(dr, di []F, j0 int) { copyRows(dr, di, re[j0*w:], im[j0*w:], len(dr), 1, 0, 0) },
		func(k1, cnt int, xr, xi []F, rs int) {
			scatterGroup(re[k1*w:], im[k1*w:], xr, xi, w, cnt, fs.n2, n1, w, rs)
		})
}

// run is the four-step transform of w sequences whose input is produced
// by gather and whose output is consumed by scatter. scr and sci each hold
// scratchLen(w) elements.
//
// Step 1 runs the n1-point transforms over j1 (stride n2·w in the batch)
// one slab of g·w columns at a time: gather(dr, di, j0) fills the
// len(dr)/w consecutive input elements j0, j0+1, … (w each) of every row
// j1 of the slab into a contiguous [n1, g·w] block, which is transformed
// there, in cache, multiplied by the twiddles W_n^{j2·k1} and written to
// the intermediate Y [n1, n2·w]. Step 2 runs, for each k1, the n2-point
// transform of the contiguous row Y[k1] of width w and passes groups of
// cnt ≤ rowGroup transformed rows to scatter(k1, cnt, xr, xi, rs): element
// k2 of row k1+i (xr[i·rs + k2·w…]) is output k1+i + n1·k2. Every gather
// happens before the first scatter, so the two may share storage.
func (fs *fourStep[F]) run(scr, sci []F, w int, gather func(dr, di []F, j0 int), scatter func(k1, cnt int, xr, xi []F, rs int)) {
	n1, n2 := fs.n1, fs.n2
	row := n2 * w
	yrow := row + rowPad // row stride of Y and rr
	N := n1 * yrow
	g, c := fs.slab(w)
	yr, yi := scr[:N], sci[:N]
	gr, gi := scr[N:N+n1*c], sci[N:N+n1*c]
	hr, hi := scr[N+n1*c:N+2*n1*c], sci[N+n1*c:N+2*n1*c]
	rr, ri := scr[N+2*n1*c:N+2*n1*c+rowGroup*yrow], sci[N+2*n1*c:N+2*n1*c+rowGroup*yrow]
	for j2 := 0; j2 < n2; j2 += g {
		cnt := min(g, n2-j2)
		cw, col := cnt*w, j2*w
		for j1 := 0; j1 < n1; j1++ {
			gather(gr[j1*cw:(j1+1)*cw], gi[j1*cw:(j1+1)*cw], j1*n2+j2)
		}
		xr, xi := fs.p1.stockhamAny(gr[:n1*cw], gi[:n1*cw], hr[:n1*cw], hi[:n1*cw], cw)
		for k1 := 0; k1 < n1; k1++ {
			o := k1*yrow + col
			t := 2 * (k1*n2 + j2)
			twiddleRows(yr[o:o+cw], yi[o:o+cw], xr[k1*cw:(k1+1)*cw], xi[k1*cw:(k1+1)*cw], fs.tw[t:t+2*cnt], w)
		}
	}
	for k1 := 0; k1 < n1; k1 += rowGroup {
		cnt := min(rowGroup, n1-k1)
		// Every row's result lands in the same one of Y and rr (the
		// number of passes fixes it), so the group stays [cnt, yrow].
		var xr, xi []F
		for i := 0; i < cnt; i++ {
			a, b := yr[(k1+i)*yrow:(k1+i)*yrow+row], yi[(k1+i)*yrow:(k1+i)*yrow+row]
			xr, xi = fs.p2.stockhamAny(a, b, rr[i*yrow:i*yrow+row], ri[i*yrow:i*yrow+row], w)
		}
		if &xr[0] == &yr[(k1+cnt-1)*yrow] {
			xr, xi = yr[k1*yrow:], yi[k1*yrow:]
		} else {
			xr, xi = rr, ri
		}
		scatter(k1, cnt, xr, xi, yrow)
	}
}

// twiddleRows sets d[j·w+q] = s[j·w+q]·tw_j for j < len(tw)/2, q < w, with
// tw_j = (tw[2j], tw[2j+1]).
func twiddleRows[F kernels.Float](dr, di, sr, si, tw []F, w int) {
	cnt := len(tw) / 2
	if w%vecLanes == 0 && useAsm[F]() {
		_, _, _, _ = dr[cnt*w-1], di[cnt*w-1], sr[cnt*w-1], si[cnt*w-1]
		twiddleAVX512(ptr32(dr), ptr32(di), ptr32(sr), ptr32(si), ptr32(tw), w, cnt)
		return
	}
	for j := 0; j < cnt; j++ {
		c, s := tw[2*j], tw[2*j+1]
		xr, xi := sr[j*w:(j+1)*w], si[j*w:(j+1)*w]
		or, oi := dr[j*w:(j+1)*w], di[j*w:(j+1)*w]
		for q := range xr {
			or[q], oi[q] = xr[q]*c-xi[q]*s, xr[q]*s+xi[q]*c
		}
	}
}

// scatterGroup copies cnt rows (rs elements apart) of n2 elements of width w
// from (sr, si) to rows of dr and di: element k2 of row i to
// dr[(i + n1·k2)·ldd…], in the order that makes consecutive writes hit
// consecutive destination rows.
func scatterGroup[F kernels.Float](dr, di, sr, si []F, w, cnt, n2, n1, ldd, rs int) {
	for k2 := 0; k2 < n2; k2++ {
		copyRows(dr[n1*k2*ldd:], di[n1*k2*ldd:], sr[k2*w:], si[k2*w:], w, cnt, ldd, rs)
	}
}

// copyRows copies rows rows of n elements: row r from sr[r·ss…] to
// dr[r·ds…] and from si[r·ss…] to di[r·ds…].
func copyRows[F kernels.Float](dr, di, sr, si []F, n, rows, ds, ss int) {
	if rows < 1 || n < 1 {
		return
	}
	last := (rows - 1)
	_, _, _, _ = dr[last*ds+n-1], di[last*ds+n-1], sr[last*ss+n-1], si[last*ss+n-1]
	if n%vecLanes == 0 && useAsm[F]() {
		copyRowsAVX512(ptr32(dr), ptr32(di), ptr32(sr), ptr32(si), n, rows, ds, ss)
		return
	}
	if n == 1 {
		for r := 0; r < rows; r++ {
			dr[r*ds], di[r*ds] = sr[r*ss], si[r*ss]
		}
		return
	}
	for r := 0; r < rows; r++ {
		copy(dr[r*ds:r*ds+n], sr[r*ss:r*ss+n])
		copy(di[r*ds:r*ds+n], si[r*ss:r*ss+n])
	}
}

// scatterRows copies the len(sr)/w rows of w elements of (sr, si) to rows
// stride elements apart in (dr, di): row k2 to dr[k2·stride:].
func scatterRows[F kernels.Float](dr, di, sr, si []F, w, stride int) {
	copyRows(dr, di, sr, si, w, len(sr)/w, stride, w)
}
