package kernels

import (
	"fmt"
	"sync"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// OperandA is GemmBF16's left operand op(A) [M, K]: packed once (PackedA),
// or float32 values packed to bf16 on the way (Float32A). A packed operand
// is held by value, so that a view made for one call stays on the
// caller's stack.
type OperandA struct {
	packed   BF16A
	isPacked bool
	trans    bool
	m, k, ld int
	f32      []float32
}

// PackedA is a packed op(A).
func PackedA(a *BF16A) OperandA { return OperandA{packed: *a, isPacked: true} }

// Float32A is op(A) [m, k] in float32: A [m, k] with row stride lda, or its
// transpose A [k, m] when transA.
func Float32A(transA bool, m, k int, a []float32, lda int) OperandA {
	return OperandA{trans: transA, m: m, k: k, ld: lda, f32: a}
}

// rows returns rows r0…r0+n of op(A), sharing its data.
func (a OperandA) rows(r0, n int) OperandA {
	switch {
	case a.isPacked:
		return OperandA{packed: a.packed.Rows(r0, n), isPacked: true}
	case a.trans:
		return OperandA{trans: true, m: n, k: a.k, ld: a.ld, f32: a.f32[r0:]}
	}
	return OperandA{m: n, k: a.k, ld: a.ld, f32: a.f32[r0*a.ld:]}
}

// OperandB is GemmBF16's right operand op(B) [K, N]: packed once (PackedB),
// float32 values (Float32B) or bf16 rows (RowsB) packed on the way; a
// packed one is held by value, as OperandA's.
type OperandB struct {
	packed   BF16B
	isPacked bool
	trans    bool
	k, n, ld int
	f32      []float32
	rows     []BF16
}

// PackedB is a packed op(B).
func PackedB(b *BF16B) OperandB { return OperandB{packed: *b, isPacked: true} }

// Float32B is op(B) [k, n] in float32: B [k, n] with row stride ldb, or its
// transpose B [n, k] when transB.
func Float32B(transB bool, k, n int, b []float32, ldb int) OperandB {
	return OperandB{trans: transB, k: k, n: n, ld: ldb, f32: b}
}

// RowsB is B [k, n] given as bf16 rows with row stride ldb (not
// transposed), as PackBF16BRows packs it.
func RowsB(k, n int, b []BF16, ldb int) OperandB {
	return OperandB{k: k, n: n, ld: ldb, rows: b}
}

// GemmBF16 computes C = alpha·op(A)·op(B) + beta·C with bf16 operands,
// products and sums in float32, across up to threads goroutines (threads
// ≤ 1: on the calling goroutine only); C [m, n] has row stride ldc. An
// operand not given packed is packed in a pooled buffer first (so
// concurrent calls share none): activations against weights packed once
// is the product of bf16 inference, a Float32A transposed against RowsB
// the weight gradient of a layer whose input is stored in bf16. With
// beta = 0, C is not read; beta = 1 accumulates (the backward's use). It
// runs on the path BF16Path names (AMX, else the faster AVX-512 path, else
// avx2fma, else the pure-Go twin), in parallel over panels of
// columns or blocks of rows. On every path a row of C is the same
// whichever other rows are computed with it, and the result does not
// depend on threads.
// GemmBF16 panics if the shapes disagree or C is too short.
func GemmBF16(threads int, alpha float32, a OperandA, b OperandB, beta float32, c []float32, ldc int) {
	pa, pb := a.packed, b.packed
	if !a.isPacked {
		pa.Data = packBufs.get(sizeA(a.m, a.k))
		packBF16A(&pa, a.trans, a.m, a.k, a.f32, a.ld, threads)
	}
	if !b.isPacked {
		pb.Data = packBufs.get(sizeB(b.k, b.n))
		if b.f32 != nil {
			packBF16B(&pb, b.trans, b.k, b.n, b.f32, b.ld, threads)
		} else {
			PackBF16BRows(threads, &pb, b.k, b.n, b.rows, b.ld)
		}
	}
	gemmBF16(&pa, &pb, alpha, beta, c, ldc, threads)
	if !a.isPacked {
		packBufs.put(pa.Data)
	}
	if !b.isPacked {
		packBufs.put(pb.Data)
	}
}

func gemmBF16(a *BF16A, b *BF16B, alpha, beta float32, c []float32, ldc int, threads int) {
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
	kern := bf16Path()
	panels := (n + bf16Panel - 1) / bf16Panel
	if threads <= 1 || m*n*k < gemmSerialFlops {
		kern.block(*a, *b, 0, m, 0, panels, alpha, beta, c, ldc)
		return
	}
	gemmBF16Par(threads, kern, *a, *b, alpha, beta, c, ldc)
}

// gemmBF16Par is gemmBF16 split across up to threads goroutines. It takes
// its operands by value, so that the closures capture copies and a
// caller's packed operands stay on its stack.
func gemmBF16Par(threads int, kern *bf16GemmPath, av BF16A, bv BF16B, alpha, beta float32, c []float32, ldc int) {
	a, b := &av, &bv
	m, n := a.M, b.N
	panels := (n + bf16Panel - 1) / bf16Panel
	nt := threads
	mr := gemmMR
	if m >= kern.rows {
		mr = kern.rows
	}
	rowTiles := (m + mr - 1) / mr
	// Split the panels when they share out evenly, else the rows; a path
	// that widens A splits the rows when each thread gets 4 row tiles or
	// more, so that no two threads widen the same rows.
	rows := kern.widen && rowTiles >= 4*nt
	if !rows && (panels%nt == 0 || panels >= 4*nt || panels >= rowTiles) {
		parallel.For(nt, panels, 1, func(_, lo, hi int) {
			kern.block(*a, *b, 0, m, lo, hi, alpha, beta, c, ldc)
		})
		return
	}
	parallel.For(nt, rowTiles, 1, func(_, lo, hi int) {
		kern.block(*a, *b, lo*mr, min(hi*mr, m), 0, panels, alpha, beta, c, ldc)
	})
}

// bf16GemmPath is one bf16 GEMM path: block computes rows r0…r1 of C for
// panels p0…p1 of B, and rows is the row block the path splits across
// threads by when m is at least that (gemmMR otherwise). widen says that
// block widens A's rows to float32 (bf16BlockWide).
type bf16GemmPath struct {
	name  string
	block func(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int)
	rows  int
	widen bool
}

// bf16Table lists the bf16 GEMM paths of this CPU, slowest first: the
// pure-Go twin everywhere, then the assembly paths this CPU runs
// (bf16AsmPaths: "avx2fma", "avx512fma", "avx512bf16", "amx" on amd64),
// in the order bf16Order measures on first use.
var bf16Table = append([]bf16GemmPath{{name: "go", block: bf16BlockGo, rows: gemmMR}}, bf16AsmPaths...)

// bf16Cur is the bf16 GEMM path in use: the fastest, unless SetBF16Path
// chose another. bf16Path sets it on first use.
var (
	bf16Cur  *bf16GemmPath
	bf16Once sync.Once
)

// bf16Path returns the bf16 GEMM path in use, ordering the table first.
func bf16Path() *bf16GemmPath {
	bf16Once.Do(func() {
		bf16Order(bf16Table)
		bf16Cur = &bf16Table[len(bf16Table)-1]
	})
	return bf16Cur
}

// BF16Paths lists the bf16 GEMM paths this CPU can run, slowest first:
// "go", then "avx2fma" on AVX2 and AVX-512, "avx512fma" on AVX-512, and
// "avx512bf16" and "amx" where the CPU (and, for AMX, Linux) allows them;
// avx512fma and avx512bf16 are ordered by a measurement of their
// instructions' peaks.
func BF16Paths() []string {
	bf16Path()
	names := make([]string, len(bf16Table))
	for i, p := range bf16Table {
		names[i] = p.name
	}
	return names
}

// SetBF16Path forces the bf16 GEMM onto a path of BF16Paths and returns
// the previous one (a test and benchmark hook, not safe while kernels
// run).
func SetBF16Path(name string) (string, error) {
	old := bf16Path().name
	for i := range bf16Table {
		if bf16Table[i].name == name {
			bf16Cur = &bf16Table[i]
			return old, nil
		}
	}
	return "", fmt.Errorf("kernels: bf16 path %q: this CPU has %v", name, BF16Paths())
}

// BF16Path is the bf16 GEMM path in use.
func BF16Path() string { return bf16Path().name }

// BF16Widens reports whether the bf16 GEMM path in use multiplies values
// widened to float32 with the float32 kernels (avx512fma, avx2fma): a
// caller whose operands already hold bf16 values (RoundBF16) gets bf16
// products from Gemm in PrecFP32 as fast, without packing them.
func BF16Widens() bool { return bf16Path().widen }

// bf16BlockGo is the pure-Go path's block: rows r0…r1 of C for panels
// p0…p1 of B.
func bf16BlockGo(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	for pn := p0; pn < p1; pn++ {
		bp := b.Data[pn*ps : pn*ps+pairs*2*bf16Panel]
		j0 := pn * bf16Panel
		bf16TileGo(&a, bp, pairs, r0, r1, min(bf16Panel, n-j0), alpha, beta, c[j0:], ldc)
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
