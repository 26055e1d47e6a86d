package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// BF16 is a bfloat16 value: the top 16 bits of a float32 (sign, 8 exponent
// bits, 7 mantissa bits).
type BF16 uint16

// ToBF16 converts src to bf16, rounding to nearest even (subnormals
// included); a NaN stays a NaN (quiet), infinities stay infinite, and
// values that round past the largest bf16 become infinite. It panics if
// len(dst) < len(src).
func ToBF16(dst []BF16, src []float32) {
	dst = dst[:len(src)]
	n := 0
	if path == PathAVX512 && hasBF16Conv() {
		if n = len(src) &^ 15; n > 0 {
			toBF16AVX512(&dst[0], &src[0], n)
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = bf16Of(src[i])
	}
}

// FromBF16 converts src to float32 (exactly). It panics if len(dst) <
// len(src).
func FromBF16(dst []float32, src []BF16) {
	dst = dst[:len(src)]
	n := 0
	if path == PathAVX512 && hasBF16Conv() {
		if n = len(src) &^ 15; n > 0 {
			fromBF16AVX512(&dst[0], &src[0], n)
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = src[i].Float32()
	}
}

// bf16Of rounds x to bf16, to nearest even.
func bf16Of(x float32) BF16 {
	b := math.Float32bits(x)
	if b&0x7FFFFFFF > 0x7F800000 { // NaN: keep the top bits, set the quiet bit
		return BF16(b>>16 | 0x40)
	}
	return BF16((b + 0x7FFF + (b >> 16 & 1)) >> 16)
}

// Float32 is b as a float32 (exact).
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// bf16Path is the bf16 GEMM path in use: "amx", "avx512bf16" or "go".
var bf16Path = bf16Best

// BF16Paths lists the bf16 GEMM paths this CPU can run, slowest first.
func BF16Paths() []string { return slices.Clone(bf16Paths) }

// SetBF16Path forces the bf16 GEMM onto a path of BF16Paths and returns
// the previous one (a test and benchmark hook, not safe while kernels
// run).
func SetBF16Path(name string) (string, error) {
	for _, p := range BF16Paths() {
		if p == name {
			old := bf16Path
			bf16Path = name
			return old, nil
		}
	}
	return "", fmt.Errorf("kernels: bf16 path %q: this CPU has %v", name, BF16Paths())
}

// BF16PeakLoop returns the AVX512-BF16 peak loop (iterations of
// independent VDPBF16PS on registers) and its flops per iteration, for
// `tokenmix bench peak`; ok is false without AVX512-BF16.
func BF16PeakLoop() (loop func(iters int), flopsPerIter float64, ok bool) {
	if !slices.Contains(bf16Paths, "avx512bf16") {
		return nil, 0, false
	}
	return bf16PeakLoop, bf16PeakFlops, true
}

// BF16Path is the bf16 GEMM path in use.
func BF16Path() string { return bf16Path }

// bf16Panel is the columns per packed panel of B (four ZMM of pairs).
const bf16Panel = 64

// BF16A is op(A) [M, K] packed for GemmBF16: M rows of bf16, each K values
// padded with zeros to an even count and stored Stride apart (a pair is
// one 32-bit unit of the dot-product instructions).
type BF16A struct {
	M, K, Stride int
	Data         []BF16
}

// BF16B is op(B) [K, N] packed for GemmBF16 in the VNNI pair layout, by
// panels of 64 columns: panel p holds columns 64p…64p+63 as ⌈K/2⌉ rows of
// 64 pairs (B[2q][j], B[2q+1][j]), zero beyond K and N.
type BF16B struct {
	K, N  int
	Data  []BF16
	pairs int // ⌈K/2⌉
	// ps is the elements from one panel to the next: pairs·2·64 as
	// packed, more in a View of fewer rows.
	ps int
}

// Rows returns rows i0…i0+m of a, a view sharing a's data. It panics if
// the rows are outside a.
func (a *BF16A) Rows(i0, m int) BF16A {
	if i0 < 0 || m < 0 || i0+m > a.M {
		panic(fmt.Sprintf("kernels: rows %d…%d of a packed A of %d rows", i0, i0+m, a.M))
	}
	return BF16A{M: m, K: a.K, Stride: a.Stride, Data: a.Data[i0*a.Stride : (i0+m)*a.Stride]}
}

// Cols returns columns q0…q0+k of a (q0 even: pairs are not split), a
// view sharing a's data. A view of an odd number of columns ending before
// a's last column sees the next column in its last pair; the product
// multiplies it by B's zero padding. It panics if q0 is odd or the
// columns are outside a.
func (a *BF16A) Cols(q0, k int) BF16A {
	if q0%2 != 0 || q0 < 0 || k < 0 || q0+k > a.K {
		panic(fmt.Sprintf("kernels: columns %d+%d of a packed A of %d columns", q0, k, a.K))
	}
	return BF16A{M: a.M, K: k, Stride: a.Stride, Data: a.Data[q0:]}
}

// View returns rows k0…k0+k and columns j0…j0+n of b, a view sharing b's
// data: k0 must be even (pairs are not split) and j0 a multiple of 64 (a
// panel's first column). A view of an odd number of rows ending before
// b's last row sees the next row in its last pair's second half; the
// product multiplies it by A's zero padding. View panics if k0 or j0 is
// not so aligned or the view is outside b.
func (b *BF16B) View(k0, k, j0, n int) BF16B {
	if k0%2 != 0 || j0%bf16Panel != 0 || k0 < 0 || k < 0 || j0 < 0 || n < 0 || k0+k > b.K || j0+n > b.N {
		panic(fmt.Sprintf("kernels: view rows %d+%d, columns %d+%d of a packed B [%d, %d]", k0, k, j0, n, b.K, b.N))
	}
	ps := b.panelStride()
	off := j0/bf16Panel*ps + k0*bf16Panel
	return BF16B{K: k, N: n, pairs: (k + 1) / 2, ps: ps, Data: b.Data[off:]}
}

func (b *BF16B) panelStride() int {
	if b.ps != 0 {
		return b.ps
	}
	return b.pairs * 2 * bf16Panel
}

// bf16Stride is the row stride of packed A for k values: even, and not a
// multiple of 2 KiB of bf16 (4 KiB), whose rows would share an L1 set.
func bf16Stride(k int) int {
	s := (k + 1) &^ 1
	if s%2048 == 0 {
		s += 32
	}
	return s
}

// PackBF16A converts op(A) (A [m, k] row-major with stride lda, or its
// transpose A [k, m] when transA) to bf16 rows in dst, reusing dst.Data
// when it is large enough.
func PackBF16A(dst *BF16A, transA bool, m, k int, a []float32, lda int) {
	packBF16A(dst, transA, m, k, a, lda, true)
}

// forRows runs fn over [0, n), split across threads when par.
func forRows(par bool, n, grain int, fn func(lo, hi int)) {
	if !par || n <= grain {
		fn(0, n)
		return
	}
	parallel.For(n, grain, func(_, lo, hi int) { fn(lo, hi) })
}

func packBF16A(dst *BF16A, transA bool, m, k int, a []float32, lda int, par bool) {
	if m < 0 || k < 0 {
		panic("kernels: negative bf16 pack shape")
	}
	st := bf16Stride(k)
	if cap(dst.Data) < m*st {
		dst.Data = make([]BF16, m*st)
	}
	*dst = BF16A{M: m, K: k, Stride: st, Data: dst.Data[:m*st]}
	data := dst.Data // the closures capture the slice, not dst (which then stays on its caller's stack)
	if m == 0 {
		return
	}
	vec := path == PathAVX512 && hasBF16Conv()
	if !transA {
		forRows(par && m*k >= 1<<14, m, 16, func(lo, hi int) {
			k16 := 0
			if vec && hi > lo && k >= 16 {
				k16 = k &^ 15
				toBF16RowsAVX512(&data[lo*st], st, &a[lo*lda], lda, hi-lo, k16/16)
			}
			for i := lo; i < hi; i++ {
				row := data[i*st : (i+1)*st]
				for q := k16; q < k; q++ {
					row[q] = bf16Of(a[i*lda+q])
				}
				clear(row[k:])
			}
		})
		return
	}
	// Transposed: op(A)'s row i is A's column i. With AVX-512, tiles of
	// 16 output rows by 16 pairs are converted and transposed in registers
	// (pairT16AVX512). The rest (and every tile without it): rows 2q and
	// 2q+1 of A, converted together, give pair q of up to 256 output rows
	// at once (the pair layout of packed B), each pair then stored as one
	// 32-bit unit while the output rows' current cache lines stay in L1.
	forRows(par && m*k >= 1<<14, m, 16, func(lo, hi int) {
		var tmp [512]BF16
		// pairs converts and scatters pairs q0…q1 of output rows i0+r0…i0+r1.
		pairs := func(out []BF16, i0, r0, r1, q0, q1 int) {
			n := r1 - r0
			for q := q0; q < q1; q += 2 {
				s0 := a[q*lda+i0+r0 : q*lda+i0+r1]
				if q+1 == k {
					for ii, v := range s0 {
						out[(r0+ii)*st+q] = bf16Of(v)
					}
					continue
				}
				s1 := a[(q+1)*lda+i0+r0 : (q+1)*lda+i0+r1]
				c0 := 0
				if vec && n >= 16 {
					c0 = n &^ 15
					pairPanelAVX512(&tmp[0], &s0[0], lda, 1, c0/16) // one pair of rows
				}
				for c := c0; c < n; c++ {
					tmp[2*c], tmp[2*c+1] = bf16Of(s0[c]), bf16Of(s1[c])
				}
				pr := unsafe.Slice((*uint32)(unsafe.Pointer(&tmp[0])), n)
				for ii, v := range pr {
					*(*uint32)(unsafe.Pointer(&out[(r0+ii)*st+q])) = v
				}
			}
		}
		for i0 := lo; i0 < hi; i0 += len(tmp) / 2 {
			n := min(len(tmp)/2, hi-i0)
			out := data[i0*st : (i0+n)*st]
			nt, kt := 0, 0 // the rows and source rows the tiles cover
			if vec {
				nt, kt = n&^15, k&^31
			}
			for r := 0; r < nt; r += 16 {
				for q := 0; q < kt; q += 32 {
					pairT16AVX512(&out[r*st+q], st, &a[q*lda+i0+r], lda)
				}
			}
			pairs(out, i0, 0, nt, kt, k)
			pairs(out, i0, nt, n, 0, k)
			for ii := range n {
				clear(out[ii*st+k : (ii+1)*st])
			}
		}
	})
}

// reset shapes b as op(B) [k, n], its data grown when it is too small
// (reused otherwise), and returns the packed size.
func (b *BF16B) reset(k, n int) int {
	size := sizeB(k, n)
	if cap(b.Data) < size {
		b.Data = make([]BF16, size)
	}
	*b = BF16B{K: k, N: n, pairs: (k + 1) / 2, Data: b.Data[:size]}
	return size
}

// PackBF16B converts op(B) (B [k, n] row-major with stride ldb, or its
// transpose B [n, k] when transB) to the pair layout of BF16B in dst,
// reusing dst.Data when it is large enough.
func PackBF16B(dst *BF16B, transB bool, k, n int, b []float32, ldb int) {
	packBF16B(dst, transB, k, n, b, ldb, true)
}

func packBF16B(dst *BF16B, transB bool, k, n int, b []float32, ldb int, par bool) {
	if k < 0 || n < 0 {
		panic("kernels: negative bf16 pack shape")
	}
	pairs, panels := (k+1)/2, (n+bf16Panel-1)/bf16Panel
	if dst.reset(k, n) == 0 {
		return
	}
	data := dst.Data // captured instead of dst, as in packBF16A
	vec := path == PathAVX512 && hasBF16Conv()
	forRows(par && k*n >= 1<<14, panels, 1, func(lo, hi int) {
		for pn := lo; pn < hi; pn++ {
			panel := data[pn*pairs*2*bf16Panel : (pn+1)*pairs*2*bf16Panel]
			j0 := pn * bf16Panel
			cols := min(bf16Panel, n-j0)
			if cols < bf16Panel || k%2 != 0 {
				clear(panel)
			}
			if transB {
				// Column j of op(B) is row j of B: its pairs are adjacent.
				// With AVX-512, tiles of 16 columns by 16 pairs are
				// converted and transposed in registers (pairTB16AVX512);
				// the rest converts a column at a time, which is that
				// column's pairs in order, each stored as one 32-bit unit.
				ct, kt := 0, 0 // the columns and values the tiles cover
				if vec {
					ct, kt = cols&^15, k&^31
				}
				for c := 0; c < ct; c += 16 {
					for q := 0; q < kt; q += 32 {
						pairTB16AVX512(&panel[(q/2*bf16Panel+c)*2], &b[(j0+c)*ldb+q], ldb)
					}
				}
				var tmp [512]BF16
				dw := unsafe.Slice((*uint32)(unsafe.Pointer(&panel[0])), len(panel)/2)
				for c := range cols {
					src := b[(j0+c)*ldb : (j0+c)*ldb+k]
					start := 0
					if c < ct {
						start = kt
					}
					for q0 := start; q0 < k; q0 += len(tmp) {
						n := min(len(tmp), k-q0)
						ToBF16(tmp[:n], src[q0:q0+n])
						if n%2 != 0 {
							tmp[n] = 0 // beyond K
						}
						pr := unsafe.Slice((*uint32)(unsafe.Pointer(&tmp[0])), (n+1)/2)
						for q, v := range pr {
							dw[(q0/2+q)*bf16Panel+c] = v
						}
					}
				}
				continue
			}
			// The complete pairs' first cols&^15 columns in one call, the
			// rest (and an odd last row) here.
			c0 := 0
			if vec && cols >= 16 && k >= 2 {
				c0 = cols &^ 15
				pairPanelAVX512(&panel[0], &b[j0], ldb, k/2, c0/16)
			}
			for q := range pairs {
				row := panel[q*2*bf16Panel : (q+1)*2*bf16Panel]
				r0 := b[2*q*ldb+j0 : 2*q*ldb+j0+cols]
				if 2*q+1 == k {
					for c, v := range r0 {
						row[2*c] = bf16Of(v)
					}
					continue
				}
				r1 := b[(2*q+1)*ldb+j0 : (2*q+1)*ldb+j0+cols]
				for c := c0; c < cols; c++ {
					row[2*c], row[2*c+1] = bf16Of(r0[c]), bf16Of(r1[c])
				}
			}
		}
	})
}

// GemmBF16 computes C = alpha·A·B + beta·C for packed bf16 operands, A
// [m, k] and B [k, n], with products and sums in float32; C [m, n] has row
// stride ldc. With beta = 0, C is not read; beta = 1 accumulates (the
// backward's use). It runs on the AMX or AVX512-BF16 kernels where the
// CPU has them (BF16Path), else on the pure-Go twin, in parallel over
// panels of columns or blocks of rows. On every path a row of C is the
// same whichever other rows are computed with it.
// GemmBF16 panics if the shapes disagree or C is too short.
func GemmBF16(alpha float32, a *BF16A, b *BF16B, beta float32, c []float32, ldc int) {
	gemmBF16(a, b, alpha, beta, c, ldc, true)
}

func gemmBF16(a *BF16A, b *BF16B, alpha, beta float32, c []float32, ldc int, par bool) {
	m, n, k := a.M, b.N, a.K
	if b.K != k {
		panic(fmt.Sprintf("kernels: GemmBF16 with A [%d, %d] and B [%d, %d]", m, k, b.K, n))
	}
	if m == 0 || n == 0 {
		return
	}
	if ldc < n || len(c) < (m-1)*ldc+n {
		panic("kernels: GemmBF16: C too short for its shape and stride")
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	asm := bf16Path != "go"
	panels := (n + bf16Panel - 1) / bf16Panel
	if !par || parallel.Threads() == 1 || m*n*k < gemmSerialFlops {
		bf16Block(asm, a, b, 0, m, 0, panels, alpha, beta, c, ldc)
		return
	}
	gemmBF16Par(asm, *a, *b, alpha, beta, c, ldc)
}

// amxRows is the rows of C one AMX micro-kernel call computes per block.
const amxRows = 32

// amxMode is how amxBF16 writes C for cols columns of a panel: 1 stores
// its tiles straight into C (C = A·B on whole halves of 32 columns), 0
// goes through a scratch block and the column mask (alpha·A·B + beta·C).
// Both write the same values for a row, so a row's result does not depend
// on the mode of its block.
func amxMode(alpha, beta float32, cols int) int {
	if alpha == 1 && beta == 0 && cols%amxRows == 0 {
		return 1
	}
	return 0
}

// gemmBF16Par is gemmBF16 split across threads. It takes its operands by
// value, so that the closures capture copies and a caller's packed
// operands stay on its stack.
func gemmBF16Par(asm bool, av BF16A, bv BF16B, alpha, beta float32, c []float32, ldc int) {
	a, b := &av, &bv
	m, n := a.M, b.N
	panels := (n + bf16Panel - 1) / bf16Panel
	nt := parallel.Threads()
	mr := gemmMR
	if bf16Path == "amx" && m >= amxRows {
		mr = amxRows
	}
	rowTiles := (m + mr - 1) / mr
	// Split the panels when they share out evenly, else the rows.
	if panels%nt == 0 || panels >= 4*nt || panels >= rowTiles {
		parallel.For(panels, 1, func(_, lo, hi int) {
			bf16Block(asm, a, b, 0, m, lo, hi, alpha, beta, c, ldc)
		})
		return
	}
	parallel.For(rowTiles, 1, func(_, lo, hi int) {
		bf16Block(asm, a, b, lo*mr, min(hi*mr, m), 0, panels, alpha, beta, c, ldc)
	})
}

// GemmBF16ST is GemmBF16 on the calling goroutine only, for callers that
// already split work across threads. Panics as GemmBF16.
func GemmBF16ST(alpha float32, a *BF16A, b *BF16B, beta float32, c []float32, ldc int) {
	gemmBF16(a, b, alpha, beta, c, ldc, false)
}

// GemmBF16RowsST computes C = alpha·op(A)·B + beta·C on the calling
// goroutine, with op(A) [m, b.K] given in float32 (A [m, b.K] with row
// stride lda, or its transpose A [b.K, m] when transA) and converted to
// bf16 on the way, and B packed. Panics as GemmBF16.
func GemmBF16RowsST(alpha float32, transA bool, m int, a []float32, lda int, b *BF16B, beta float32, c []float32, ldc int) {
	var pa BF16A
	pa.Data = packBufs.get(sizeA(m, b.K))
	packBF16A(&pa, transA, m, b.K, a, lda, false)
	gemmBF16(&pa, b, alpha, beta, c, ldc, false)
	packBufs.put(pa.Data)
}

// RowsA returns bf16 rows, m rows of k values stored k apart, as a packed
// A (sharing data), when that is PackBF16A's layout for k (k even, and
// not a multiple of 2048), and false otherwise.
func RowsA(m, k int, data []BF16) (BF16A, bool) {
	if k%2 != 0 || bf16Stride(k) != k || len(data) < m*k {
		return BF16A{}, false
	}
	return BF16A{M: m, K: k, Stride: k, Data: data[:m*k]}, true
}

// PackBF16BRows packs bf16 rows as op(B) [k, n] (B [k, n] with row stride
// ldb, not transposed) in the pair layout of BF16B, like PackBF16B of
// their float32 values, reusing dst.Data when it is large enough.
func PackBF16BRows(dst *BF16B, k, n int, b []BF16, ldb int) {
	pairs, panels := (k+1)/2, (n+bf16Panel-1)/bf16Panel
	if dst.reset(k, n) == 0 {
		return
	}
	data := dst.Data
	vec := path == PathAVX512
	parallel.For(panels, 1, func(_, lo, hi int) {
		for pn := lo; pn < hi; pn++ {
			panel := data[pn*pairs*2*bf16Panel : (pn+1)*pairs*2*bf16Panel]
			j0 := pn * bf16Panel
			cols := min(bf16Panel, n-j0)
			if cols < bf16Panel || k%2 != 0 {
				clear(panel)
			}
			dw := unsafe.Slice((*uint32)(unsafe.Pointer(&panel[0])), len(panel)/2)
			for q := range pairs {
				r0 := b[2*q*ldb+j0 : 2*q*ldb+j0+cols]
				out := dw[q*bf16Panel : q*bf16Panel+cols]
				if 2*q+1 == k {
					for c, v := range r0 {
						out[c] = uint32(v)
					}
					continue
				}
				r1 := b[(2*q+1)*ldb+j0 : (2*q+1)*ldb+j0+cols]
				c0 := 0
				if vec && cols >= 16 {
					c0 = cols &^ 15
					pairRowsAVX512(&panel[2*q*bf16Panel], &r0[0], &r1[0], c0)
				}
				for c := c0; c < cols; c++ {
					out[c] = uint32(r0[c]) | uint32(r1[c])<<16
				}
			}
		}
	})
}

// GemmBF16TN computes C [m,n] = alpha·Aᵀ·B + beta·C for A [k,m] in float32
// (row stride lda), converted to bf16 on the way, and B [k,n] given as bf16
// rows (row stride ldb): the weight gradient of a linear layer whose input
// is stored in bf16. It runs across threads and panics as GemmBF16.
func GemmBF16TN(alpha float32, m, n, k int, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	var pa BF16A
	var pb BF16B
	pa.Data, pb.Data = packBufs.get(sizeA(m, k)), packBufs.get(sizeB(k, n))
	packBF16A(&pa, true, m, k, a, lda, true)
	PackBF16BRows(&pb, k, n, b, ldb)
	gemmBF16(&pa, &pb, alpha, beta, c, ldc, true)
	packBufs.put(pa.Data, pb.Data)
}

// GemmBF16PackB is GemmBF16PackBST split across threads.
func GemmBF16PackB(alpha float32, a *BF16A, transB bool, n int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	var pb BF16B
	pb.Data = packBufs.get(sizeB(a.K, n))
	packBF16B(&pb, transB, a.K, n, b, ldb, true)
	gemmBF16(a, &pb, alpha, beta, c, ldc, true)
	packBufs.put(pb.Data)
}

// GemmBF16PackBST computes C = alpha·A·op(B) + beta·C on the calling
// goroutine, with A packed and op(B) [a.K, n] given in float32 (B [a.K, n]
// with row stride ldb, or its transpose B [n, a.K] when transB) and
// converted to bf16 on the way. Panics as GemmBF16.
func GemmBF16PackBST(alpha float32, a *BF16A, transB bool, n int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	var pb BF16B
	pb.Data = packBufs.get(sizeB(a.K, n))
	packBF16B(&pb, transB, a.K, n, b, ldb, false)
	gemmBF16(a, &pb, alpha, beta, c, ldc, false)
	packBufs.put(pb.Data)
}

// GemmBF16Rows is GemmBF16 with A given as float32 rows, A [m, b.K] with
// row stride lda, converted to bf16 on the way (in a pooled buffer, so
// concurrent calls do not share it): the product of activations with
// weights packed once, as bf16 inference runs its linear layers.
func GemmBF16Rows(alpha float32, m int, a []float32, lda int, b *BF16B, beta float32, c []float32, ldc int) {
	pa := bf16APool.Get().(*BF16A)
	PackBF16A(pa, false, m, b.K, a, lda)
	GemmBF16(alpha, pa, b, beta, c, ldc)
	bf16APool.Put(pa)
}

var bf16APool = sync.Pool{New: func() any { return new(BF16A) }}

// bf16Block computes rows r0…r1 of C for panels p0…p1 of B.
func bf16Block(asm bool, a *BF16A, b *BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	amx := asm && bf16Path == "amx" && pairs >= 16
	var tail BF16A
	if amx {
		tail = amxTail(a, r0, r1, pairs/16*32)
	}
	for pn := p0; pn < p1; pn++ {
		bp := b.Data[pn*ps : pn*ps+pairs*2*bf16Panel]
		j0 := pn * bf16Panel
		cols := min(bf16Panel, n-j0)
		if !asm {
			bf16TileGo(a, bp, pairs, r0, r1, cols, alpha, beta, c[j0:], ldc)
			continue
		}
		mask := ^uint64(0)
		if cols < bf16Panel {
			mask = 1<<cols - 1
		}
		if amx {
			amxBlock(a, &tail, bp, pairs, r0, r1, cols, mask, alpha, beta, c[j0:], ldc)
			continue
		}
		bf16K512Rows(a, bp, 0, pairs, r0, r1, mask, alpha, beta, c[j0:], ldc)
	}
	if tail.Data != nil {
		packBufs.put(tail.Data)
	}
}

// amxTail returns the last rows of r0…r1 beyond the whole blocks of 32,
// the first k values of each, padded with zero rows to 32 rows stored k
// apart (in a buffer of packBufs); no rows when there are none.
func amxTail(a *BF16A, r0, r1, k int) BF16A {
	rest := (r1 - r0) % amxRows
	if rest == 0 {
		return BF16A{}
	}
	rt := r1 - rest
	buf := packBufs.get(amxRows * k)
	if cap(buf) < amxRows*k {
		buf = make([]BF16, amxRows*k)
	}
	t := BF16A{M: amxRows, K: k, Stride: k, Data: buf[:amxRows*k]}
	for i := range amxRows {
		row := t.Data[i*k : (i+1)*k]
		if i < rest {
			copy(row, a.Data[(rt+i)*a.Stride:(rt+i)*a.Stride+k])
		} else {
			clear(row)
		}
	}
	return t
}

// bf16K512Rows runs the AVX512-BF16 micro-kernels on rows r0…r1 of C
// against pairs q0…q1 of one packed panel bp.
func bf16K512Rows(a *BF16A, bp []BF16, q0, q1, r0, r1 int, mask uint64, alpha, beta float32, c []float32, ldc int) {
	rows := r1 - r0
	full, rest := rows/gemmMR, rows%gemmMR
	lda := a.Stride / 2 // in pairs
	if full > 0 {
		bf16K512[gemmMR-1](q1-q0, &a.Data[r0*a.Stride+2*q0], lda, &bp[q0*2*bf16Panel], &c[r0*ldc], ldc, alpha, beta, mask, full, gemmMR*lda)
	}
	if rest > 0 {
		r := r0 + full*gemmMR
		bf16K512[rest-1](q1-q0, &a.Data[r*a.Stride+2*q0], lda, &bp[q0*2*bf16Panel], &c[r*ldc], ldc, alpha, beta, mask, 1, 0)
	}
}

// amxBlock computes rows r0…r1 of C against one packed panel bp (cols
// columns, mask their bits) on AMX, with the rows beyond the last whole
// block of 32 taken from tail (amxTail's copy, padded with zero rows), so
// that every row goes through the same tile products wherever it falls:
// a sequence's rows round alike alone and in a batch. AMX takes K by
// steps of 16 pairs; the pairs beyond the last whole step are added by the
// AVX512-BF16 kernels, for every row alike.
func amxBlock(a, tail *BF16A, bp []BF16, pairs, r0, r1, cols int, mask uint64, alpha, beta float32, c []float32, ldc int) {
	steps := pairs / 16
	blocks, rest := (r1-r0)/amxRows, (r1-r0)%amxRows
	rt := r0 + blocks*amxRows
	var tmp [amxRows * amxRows]float32
	halves := (cols + amxRows - 1) / amxRows
	if blocks > 0 {
		amxBF16(steps, &a.Data[r0*a.Stride], 2*a.Stride, &bp[0], &c[r0*ldc], ldc,
			alpha, beta, mask, blocks, &tmp[0], &amxConfig[0], amxMode(alpha, beta, cols), amxRows, halves)
	}
	if rest > 0 {
		amxBF16(steps, &tail.Data[0], 2*tail.Stride, &bp[0], &c[rt*ldc], ldc,
			alpha, beta, mask, 1, &tmp[0], &amxConfig[0], 0, rest, halves)
	}
	if steps*16 < pairs {
		bf16K512Rows(a, bp, steps*16, pairs, r0, r1, mask, alpha, 1, c, ldc)
	}
}

// bf16TileGo is the pure-Go twin of the AVX512-BF16 kernels: rows r0…r1
// of C against one packed panel bp, cols of its columns.
func bf16TileGo(a *BF16A, bp []BF16, pairs, r0, r1, cols int, alpha, beta float32, c []float32, ldc int) {
	var acc [bf16Panel]float32
	for i := r0; i < r1; i++ {
		clear(acc[:])
		row := a.Data[i*a.Stride:]
		for q := range pairs {
			a0, a1 := row[2*q].Float32(), row[2*q+1].Float32()
			br := bp[q*2*bf16Panel : (q+1)*2*bf16Panel]
			for j := range cols {
				acc[j] += a0*br[2*j].Float32() + a1*br[2*j+1].Float32()
			}
		}
		ci := c[i*ldc : i*ldc+cols]
		for j := range ci {
			v := alpha * acc[j]
			if beta != 0 {
				v += beta * ci[j]
			}
			ci[j] = v
		}
	}
}
