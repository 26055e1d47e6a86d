package kernels

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

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
// when it is large enough, across up to threads goroutines.
func PackBF16A(threads int, dst *BF16A, transA bool, m, k int, a []float32, lda int) {
	packBF16A(dst, transA, m, k, a, lda, threads)
}

// serialPack says whether a packer runs on the calling goroutine: one
// thread, or work too small to split (under 16 Ki values, or n units
// within one grain).
func serialPack(threads, values, n, grain int) bool {
	return threads <= 1 || values < 1<<14 || n <= grain
}

// packArgs are the arguments of the packers' row and panel loops: the
// packed data (rows st apart, or panels of pairs pair rows), op(A) or
// op(B) [k, n] from float32 src or bf16 rows, ld apart, transposed or not;
// kind says which loop runs.
type packArgs struct {
	kind  packKind
	data  []BF16
	st, k int
	n     int
	src   []float32
	rows  []BF16
	ld    int
	trans bool
	pairs int
	// block says that packRowsAT fills k columns of rows whose other
	// columns (and padding) belong to other calls: it clears nothing.
	block bool
	// ps, when not 0, is the values from one panel of B to the next
	// (panels of a packed B whose pairs rows are only some of its own).
	ps int
}

// packKind is a packer's loop: rows of op(A) = A or Aᵀ, or panels of
// op(B) from float32 values or from bf16 rows.
type packKind uint8

const (
	packRowsA packKind = iota
	packRowsAT
	packPanelsB
	packPanelsBRows
)

// run packs units lo…hi of x: rows of op(A), or panels of op(B).
func (x *packArgs) run(lo, hi int) {
	switch x.kind {
	case packRowsA:
		packARows(x, lo, hi)
	case packRowsAT:
		packATRows(x, lo, hi)
	case packPanelsB:
		packBPanels(x, lo, hi)
	case packPanelsBRows:
		packBRowsPanels(x, lo, hi)
	}
}

// pack runs x over units [0, n): on the calling goroutine when serial,
// else across up to threads goroutines. The arguments travel in x, not in
// a closure, and only the parallel call copies them to the heap: packing
// on the calling goroutine allocates nothing.
func (x packArgs) pack(threads int, serial bool, n, grain int) {
	if serial {
		x.run(0, n)
		return
	}
	xc := x
	parallel.For(threads, n, grain, func(_, lo, hi int) { xc.run(lo, hi) })
}

func packBF16A(dst *BF16A, transA bool, m, k int, a []float32, lda int, threads int) {
	if m < 0 || k < 0 {
		panic("kernels: negative bf16 pack shape")
	}
	st := dst.reset(m, k)
	data := dst.Data
	if m == 0 {
		return
	}
	kind := packRowsA
	if transA {
		kind = packRowsAT
	}
	packArgs{kind: kind, data: data, st: st, k: k, src: a, ld: lda}.pack(threads, serialPack(threads, m*k, m, 16), m, 16)
}

// packARows packs rows lo…hi of a row-major A.
func packARows(x *packArgs, lo, hi int) {
	data, st, k, a, lda := x.data, x.st, x.k, x.src, x.ld
	k16 := toBF16RowsVec(data, st, a, lda, lo, hi, k)
	for i := lo; i < hi; i++ {
		row := data[i*st : (i+1)*st]
		for q := k16; q < k; q++ {
			row[q] = bf16Of(a[i*lda+q])
		}
		clear(row[k:])
	}
}

// packATRows packs rows lo…hi of op(A) = Aᵀ: op(A)'s row i is A's column
// i. With AVX-512, tiles of 16 output rows by 16 pairs are converted and
// transposed in registers (pairT16AVX512). The rest (and every tile
// without it): rows 2q and 2q+1 of A, converted together, give pair q of
// up to 256 output rows at once (the pair layout of packed B), each pair
// then stored as one 32-bit unit while the output rows' current cache
// lines stay in L1.
func packATRows(x *packArgs, lo, hi int) {
	data, st, k, a, lda := x.data, x.st, x.k, x.src, x.ld
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
			c0 := pairPanelVec(tmp[:], s0, lda, 1, n) // one pair of rows
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
		out := data[i0*st : min((i0+n)*st, len(data))]
		nt, kt := pairT16Tiles(out, st, a, lda, i0, n, k) // the rows and source rows the tiles cover
		pairs(out, i0, 0, nt, kt, k)
		pairs(out, i0, nt, n, 0, k)
		if x.block {
			continue
		}
		for ii := range n {
			clear(out[ii*st+k : (ii+1)*st])
		}
	}
}

// packBF16Both packs rows r0…r1 of a float32 matrix Y [m, k], given as
// blk (row r0 first, rows ld apart), into rows r0…r1 of a (op(A) = Y,
// shaped [m, k]) and columns r0…r1 of at (op(A) = Yᵀ, shaped [k, m],
// its padding columns already zero): the two packed forms of a gradient
// that a linear layer's backward multiplies. r0 is even, and so is r1
// unless it is m. Disjoint blocks may be packed concurrently.
func packBF16Both(a, at *BF16A, blk []float32, ld, r0, r1 int) {
	x := packArgs{kind: packRowsA, data: a.Data[r0*a.Stride:], st: a.Stride, k: a.K, src: blk, ld: ld}
	packARows(&x, 0, r1-r0)
	y := packArgs{kind: packRowsAT, data: at.Data[r0:], st: at.Stride, k: r1 - r0, src: blk, ld: ld, block: true}
	packATRows(&y, 0, at.M)
}

// shapeBF16A shapes dst as op(A) [m, k] on data (at least sizeA(m, k)
// values) with every row's padding cleared, ready for blocks of
// packBF16Both.
func shapeBF16A(dst *BF16A, m, k int, data []BF16) {
	st := bf16Stride(k)
	*dst = BF16A{M: m, K: k, Stride: st, Data: data[:m*st]}
	for i := range m {
		clear(dst.Data[i*st+k : (i+1)*st])
	}
}

// reset shapes a as op(A) [m, k], its data grown when it is too small
// (reused otherwise), and returns its row stride.
func (a *BF16A) reset(m, k int) int {
	st := bf16Stride(k)
	if cap(a.Data) < m*st {
		a.Data = make([]BF16, m*st)
	}
	*a = BF16A{M: m, K: k, Stride: st, Data: a.Data[:m*st]}
	return st
}

// ExpSubMulPackBF16 is the step of an attention tile's backward in bf16
// from its scores to the packed operands of its products: for S and dP
// [rows, cols] (float32, rows cols apart), lse (lse[r·ls] for row r) and
// d (d[r·ds]), it computes P = exp(S − lse_r) and dS = P ⊙ (dP − d_r),
// and packs dS as op(A) [rows, cols] into dsa and as op(B) [rows, cols]
// into dsb, and P as op(B) into pb, each reusing its Data when large
// enough. The result is bit for bit ExpSubRows(s, rows, cols, lse, ls)
// and SubMulRows(dp, s, rows, cols, d, ds) followed by PackBF16A(1, dsa,
// false, rows, cols, dp, cols), PackBF16B(1, dsb, false, rows, cols, dp,
// cols) and PackBF16B(1, pb, false, rows, cols, s, cols), which it runs
// where its fused kernel does not apply (AVX-512, rows in pairs, whole
// panels of 64 columns, ls = ds = 1); the fused kernel reads S and dP
// once and stores neither P nor dS in float32. s and dp may be
// overwritten.
func ExpSubMulPackBF16(dsa *BF16A, dsb, pb *BF16B, s, dp []float32, rows, cols int, lse []float32, ls int, d []float32, ds int) {
	if expSubMulPackVec(dsa, dsb, pb, s, dp, rows, cols, lse, ls, d, ds) {
		return
	}
	ExpSubRows(s, rows, cols, lse, ls)
	SubMulRows(dp, s, rows, cols, d, ds)
	packBF16A(dsa, false, rows, cols, dp, cols, 1)
	packBF16B(dsb, false, rows, cols, dp, cols, 1)
	packBF16B(pb, false, rows, cols, s, cols, 1)
}

// OnlineSoftmaxBF16 is OnlineSoftmax with the tile's exps packed as op(A)
// [rows, cols] into pa in bf16 (reusing its Data when large enough), for
// the product with the values: bit for bit OnlineSoftmax(x, rows, cols,
// m, l, ms, alpha) followed by PackBF16A(1, pa, false, rows, cols, x,
// cols), which it runs where its fused kernel does not apply (AVX-512,
// cols a multiple of 16); the fused kernel writes the exps in bf16 only,
// leaving x's scores as they are. x is overwritten or kept.
func OnlineSoftmaxBF16(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32, pa *BF16A) {
	if rows > 0 {
		_, _, _, _ = x[:rows*cols], m[(rows-1)*ms], l[(rows-1)*ms], alpha[:rows]
	}
	if onlineSoftmaxBF16Vec(x, rows, cols, m, l, ms, alpha, pa) {
		return
	}
	OnlineSoftmax(x, rows, cols, m, l, ms, alpha)
	packBF16A(pa, false, rows, cols, x, cols, 1)
}

// GeluBackPackBF16 is the feed-forward's backward in bf16 from fc2's
// input gradient to fc1's output gradient, for rows k0…k0+k of fc1's
// output h stored in bf16 (k rows of n values, row k0 first): it sets dg
// [k, n] = GELU'(h)·dg and packs GELU(h) as rows k0…k0+k of dst, as
// PackBF16BBlock(dst, k0, _, n, k) packs them (dst [K, n]). The result is
// bit for bit that of GeluBackward(1, dg, x, dg) and GeluForward(1, x, x)
// on x = FromBF16(h) followed by PackBF16BBlock, which it runs (with x in
// tmp, k·n values) where its fused kernel does not apply (AVX-512, k
// even, n a multiple of 64); the fused kernel reads h once, as bf16, and
// takes one exp for both where their arguments agree.
func GeluBackPackBF16(dg []float32, dst *BF16B, k0 int, h []BF16, n, k int, tmp []float32) {
	if k0%2 != 0 || k0+k > dst.K || dst.N != n || (k%2 != 0 && k0+k != dst.K) {
		panic(fmt.Sprintf("kernels: GeluBackPackBF16 of rows %d+%d, %d columns, into a packed B [%d, %d]", k0, k, n, dst.K, dst.N))
	}
	if geluBackPackVec(dg, dst, k0, h, n, k) {
		return
	}
	x := tmp[:k*n]
	FromBF16(x, h[:k*n])
	GeluBackward(1, dg[:k*n], x, dg[:k*n])
	GeluForward(1, x, x)
	PackBF16BBlock(dst, k0, x, n, k)
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
// reusing dst.Data when it is large enough, across up to threads
// goroutines.
func PackBF16B(threads int, dst *BF16B, transB bool, k, n int, b []float32, ldb int) {
	packBF16B(dst, transB, k, n, b, ldb, threads)
}

func packBF16B(dst *BF16B, transB bool, k, n int, b []float32, ldb int, threads int) {
	if k < 0 || n < 0 {
		panic("kernels: negative bf16 pack shape")
	}
	pairs, panels := (k+1)/2, (n+bf16Panel-1)/bf16Panel
	if dst.reset(k, n) == 0 {
		return
	}
	x := packArgs{kind: packPanelsB, data: dst.Data, k: k, n: n, src: b, ld: ldb, trans: transB, pairs: pairs}
	x.pack(threads, serialPack(threads, k*n, panels, 1), panels, 1)
}

// ShapeBF16B shapes dst as op(B) [k, n] on data (at least
// PackedSizeB(k, n) values), for blocks of rows that PackBF16BBlock packs.
func ShapeBF16B(dst *BF16B, k, n int, data []BF16) {
	*dst = BF16B{K: k, N: n, pairs: (k + 1) / 2, Data: data[:sizeB(k, n)]}
}

// PackBF16BBlock packs rows k0…k0+k of op(B) = B [K, N] (not transposed)
// into dst, shaped [K, N], from float32 rows src (row k0 first, ldb
// apart): the values PackBF16B gives those rows, padding included. k0 is
// even, and so is k unless the block ends at K. Disjoint blocks may be
// packed concurrently; it runs on the calling goroutine.
func PackBF16BBlock(dst *BF16B, k0 int, src []float32, ldb, k int) {
	if k0%2 != 0 || k0+k > dst.K || (k%2 != 0 && k0+k != dst.K) {
		panic(fmt.Sprintf("kernels: PackBF16BBlock of rows %d+%d of a packed B of %d rows", k0, k, dst.K))
	}
	if k == 0 || dst.N == 0 {
		return
	}
	x := packArgs{kind: packPanelsB, data: dst.Data[k0*bf16Panel:], k: k, n: dst.N, src: src, ld: ldb, pairs: (k + 1) / 2, ps: dst.panelStride()}
	packBPanels(&x, 0, (dst.N+bf16Panel-1)/bf16Panel)
}

// packBPanels packs panels lo…hi of op(B).
func packBPanels(x *packArgs, lo, hi int) {
	k, b, ldb, transB, pairs := x.k, x.src, x.ld, x.trans, x.pairs
	for pn := lo; pn < hi; pn++ {
		panel, j0, cols := packPanel(x, pn)
		if transB {
			// Column j of op(B) is row j of B: its pairs are adjacent.
			// With AVX-512, tiles of 16 columns by 16 pairs are
			// converted and transposed in registers (pairTB16AVX512);
			// the rest converts a column at a time, which is that
			// column's pairs in order, each stored as one 32-bit unit.
			ct, kt := pairTB16Tiles(panel, b, ldb, j0, cols, k) // the columns and values the tiles cover
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
		c0 := pairPanelVec(panel, b[j0:], ldb, k/2, cols)
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
// their float32 values, reusing dst.Data when it is large enough, across
// up to threads goroutines.
func PackBF16BRows(threads int, dst *BF16B, k, n int, b []BF16, ldb int) {
	pairs, panels := (k+1)/2, (n+bf16Panel-1)/bf16Panel
	if dst.reset(k, n) == 0 {
		return
	}
	x := packArgs{kind: packPanelsBRows, data: dst.Data, k: k, n: n, rows: b, ld: ldb, pairs: pairs}
	x.pack(threads, threads <= 1 || panels == 1, panels, 1)
}

// packPanel returns packed panel pn of x (cleared where it has padding:
// columns beyond n or a last half pair), its first column and its
// columns.
func packPanel(x *packArgs, pn int) (panel []BF16, j0, cols int) {
	ps := x.ps
	if ps == 0 {
		ps = x.pairs * 2 * bf16Panel
	}
	panel = x.data[pn*ps : pn*ps+x.pairs*2*bf16Panel]
	j0 = pn * bf16Panel
	cols = min(bf16Panel, x.n-j0)
	if cols < bf16Panel || x.k%2 != 0 {
		clear(panel)
	}
	return panel, j0, cols
}

// packBRowsPanels packs panels lo…hi of bf16 rows x.rows.
func packBRowsPanels(x *packArgs, lo, hi int) {
	k, b, ldb, pairs := x.k, x.rows, x.ld, x.pairs
	for pn := lo; pn < hi; pn++ {
		panel, j0, cols := packPanel(x, pn)
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
			c0 := pairRowsVec(panel[2*q*bf16Panel:], r0, r1, cols)
			for c := c0; c < cols; c++ {
				out[c] = uint32(r0[c]) | uint32(r1[c])<<16
			}
		}
	}
}

// packBufs holds the packing buffers of the bf16 products between calls.
// Unlike a sync.Pool it keeps them across garbage collections: a training
// step packs the same shapes every step, and reallocating megabytes per
// product would cost more than the packing.
var packBufs bufList

// bufList is a free list of []BF16 buffers, safe for concurrent use.
type bufList struct {
	mu   sync.Mutex
	free [][]BF16
}

// get returns the smallest free buffer of capacity ≥ n, else the largest
// (or nil when none is free): the packers grow it as they need, and put
// returns it grown.
func (l *bufList) get(n int) []BF16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := -1
	for i, b := range l.free {
		switch {
		case best < 0:
			best = i
		case cap(b) >= n && (cap(l.free[best]) < n || cap(b) < cap(l.free[best])):
			best = i
		case cap(l.free[best]) < n && cap(b) > cap(l.free[best]):
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := l.free[best]
	l.free[best] = l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	return b
}

// getN returns n values of a free buffer: the smallest of capacity ≥ n,
// else a new one (the largest free buffer, which get hands out then, is
// dropped for the new one, as the packers' growing drops it).
func (l *bufList) getN(n int) []BF16 {
	b := l.get(n)
	if cap(b) < n {
		b = make([]BF16, n)
	}
	return b[:n]
}

// put returns buffers to the list.
func (l *bufList) put(bufs ...[]BF16) {
	l.mu.Lock()
	l.free = append(l.free, bufs...)
	l.mu.Unlock()
}

// sizeA and sizeB are the packed sizes of op(A) [m,k] and op(B) [k,n].
func sizeA(m, k int) int { return m * bf16Stride(k) }
func sizeB(k, n int) int {
	return (n + bf16Panel - 1) / bf16Panel * ((k + 1) / 2) * 2 * bf16Panel
}

// PackedSizeA and PackedSizeB are the bf16 values that a packed op(A)
// [m, k] and a packed op(B) [k, n] hold: the Data a caller gives
// PackBF16A and PackBF16B so that they allocate nothing.
func PackedSizeA(m, k int) int { return sizeA(m, k) }
func PackedSizeB(k, n int) int { return sizeB(k, n) }
