//go:build !purego

package kernels

import (
	"math"
	"slices"
	"time"

	"golang.org/x/sys/cpu"
)

// bf16AsmPaths lists the assembly bf16 GEMM paths of this CPU, slowest
// first: "avx2fma" on AVX2 and "avx512fma" on AVX-512 (the packed operands
// widened to float32 block by block and multiplied by that path's float32
// micro-kernels), then
// "avx512bf16" where the CPU has AVX512-BF16 (VDPBF16PS), and "amx" where
// it also has AMX-BF16 (TDPBF16PS) and Linux grants the process its tile
// data. Where both AVX-512 paths run, bf16Order measures them on first use
// and puts avx512fma after avx512bf16 if it is clearly the faster.
var bf16AsmPaths = func() []bf16GemmPath {
	var paths []bf16GemmPath
	if Best == PathAVX2 || Best == PathAVX512 {
		paths = append(paths, bf16GemmPath{name: "avx2fma", block: bf16BlockAVX2, rows: gemmMR, widen: true})
	}
	if Best != PathAVX512 {
		return paths
	}
	paths = append(paths, bf16GemmPath{name: "avx512fma", block: bf16BlockAVX512, rows: gemmMR, widen: true})
	if !hasBF16Dot {
		return paths
	}
	paths = append(paths, bf16GemmPath{name: "avx512bf16", block: bf16BlockK512, rows: gemmMR})
	if cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && requestAMX() {
		paths = append(paths, bf16GemmPath{name: "amx", block: bf16BlockAMX, rows: amxRows})
	}
	return paths
}()

// hasBF16Dot says whether the AVX512-BF16 kernels run here: the CPU has
// VDPBF16PS and the AVX-512 path is in use.
var hasBF16Dot = cpu.X86.HasAVX512BF16 && Best == PathAVX512

// bf16Cvt makes the conversion and packing kernels (toBF16AVX512,
// keepBF16AVX512, keepBF16NTAVX512, toBF16RowsAVX512, pairPanelAVX512,
// pairT16AVX512, pairTB16AVX512) and the fused ones (expSubMulPackAVX512,
// expSubRowsBF16AVX512, geluBackPackAVX512) round with VCVTNEPS2BF16 and
// VCVTNE2PS2BF16 rather than in integer arithmetic: the same bits,
// subnormal inputs included (see
// internal/asmgen's conv.go), 1.5–1.7× faster on blocks in cache, which
// made the bf16 training step 1.01–1.02× faster (d256, T 1024, batch 4,
// 40 and 60 in-process alternations, Intel Xeon family 6 model 207).
// The assembly reads it; tests set it to run both bodies.
var bf16Cvt = hasBF16Dot

// bf16Order puts the faster of the two AVX-512 paths after the other in
// table (the pure-Go twin first, then bf16AsmPaths' order). The widened
// operands run at about 0.9 of the FMA's peak and VDPBF16PS at 0.95 of
// its own, which counts its 32 products as 64 flops: so avx512fma goes
// after avx512bf16 when the dot product's peak is under 0.75 of the
// FMA's, timed on registers (fmaPeak512, bf16PeakLoop), best of 7 rounds
// of about 10 µs each. Where VDPBF16PS issues as often as the FMA its
// peak is twice the FMA's (Zen 5: 839 against 410 GFLOP/s on 2 threads);
// where it issues a quarter as often (an Intel Xeon, family 6 model 207,
// AMX not exposed) half (171 against 348). The
// instructions' rates decide, and they do not move with the machine's load
// as the kernels' times do.
func bf16Order(table []bf16GemmPath) {
	i := slices.IndexFunc(table, func(p bf16GemmPath) bool { return p.name == "avx512bf16" })
	if i < 1 || table[i-1].name != "avx512fma" {
		return
	}
	time1 := func(loop func(int), iters int) time.Duration {
		t0 := time.Now()
		loop(iters)
		return time.Since(t0)
	}
	// Equal flops: 3 FMA iterations (3·512) for each VDPBF16PS one (1536).
	const iters = 2000
	tf, td := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 7 {
		tf = min(tf, time1(fmaPeak512, 3*iters))
		td = min(td, time1(bf16PeakLoop, iters))
	}
	if float64(tf) < 0.75*float64(td) {
		table[i-1], table[i] = table[i], table[i-1]
	}
}

// BF16PeakLoop returns the AVX512-BF16 peak loop (iterations of
// independent VDPBF16PS on registers) and its flops per iteration, for
// `tokenmix bench peak`; ok is false without AVX512-BF16.
func BF16PeakLoop() (loop func(iters int), flopsPerIter float64, ok bool) {
	if !hasBF16Dot {
		return nil, 0, false
	}
	return bf16PeakLoop, bf16PeakFlops, true
}

// bf16BlockK512 is the AVX512-BF16 path's block: rows r0…r1 of C for
// panels p0…p1 of B.
func bf16BlockK512(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	for pn := p0; pn < p1; pn++ {
		bp := b.Data[pn*ps : pn*ps+pairs*2*bf16Panel]
		j0 := pn * bf16Panel
		bf16K512Rows(&a, bp, 0, pairs, r0, r1, panelMask(n-j0), alpha, beta, c[j0:], ldc)
	}
}

// panelMask is the column mask of a panel with cols columns left in B.
func panelMask(cols int) uint64 {
	if cols < bf16Panel {
		return 1<<cols - 1
	}
	return ^uint64(0)
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

// bf16BlockAVX512 and bf16BlockAVX2 are the avx512fma and avx2fma paths'
// blocks.
func bf16BlockAVX512(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	bf16BlockWide(PathAVX512, &a, &b, r0, r1, p0, p1, alpha, beta, c, ldc)
}

func bf16BlockAVX2(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	bf16BlockWide(PathAVX2, &a, &b, r0, r1, p0, p1, alpha, beta, c, ldc)
}

// bf16BlockWide computes rows r0…r1 of C for panels p0…p1 of B with the
// float32 micro-kernels of path p, by the float32 driver's blocking
// (gemmBlocked) on operands widened to float32 on the way: K in blocks of
// kc values (pairs whole), as the float32 GEMM splits it; for each block,
// a group of panels (their kc widened rows of 64 floats in 512 KiB) and
// then blocks of A's rows (kc widened values each, about 256 KiB), and the
// micro-kernels run every panel of the group down a block of rows while
// both are in L2 (gemmTiles; on AVX2 a panel is four of 16 columns, read
// 64 floats apart). A row's values are stored a little over kc apart when
// kc floats are a multiple of 4 KiB. On AVX-512 a block of bf16FewRows
// rows or fewer goes to bf16FewWide instead.
func bf16BlockWide(p Path, a *BF16A, b *BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	k2 := 2 * pairs
	kc := (gemmKBlock(k2) + 1) &^ 1 // the float32 GEMM's blocks, pairs whole
	ld := kc
	if ld%1024 == 0 {
		ld += 16
	}
	if p == PathAVX512 && r1-r0 <= bf16FewRows {
		bf16FewWide(a, b, r0, r1, p0, p1, kc, alpha, beta, c, ldc)
		return
	}
	widen, sub := widenPanelAVX512, bf16Panel // widening kernel, columns per gemmTiles call
	if p == PathAVX2 {
		widen, sub = widenPanelAVX2, 16
	}
	np := min(max(1, gemmPackB/(kc*bf16Panel)), p1-p0) // panels per group
	mb := max(gemmMR, gemmPackA/ld/gemmMR*gemmMR)
	w := gemmPool.Get().(*gemmWork)
	bw, aw := w.bufs(np*kc*bf16Panel, min(mb, r1-r0)*ld)
	for g0 := p0; g0 < p1; g0 += np {
		g1 := min(g0+np, p1)
		for pc := 0; pc < k2; pc += kc {
			kcb := min(kc, k2-pc)
			pw := kcb * bf16Panel // floats per widened panel
			for pn := g0; pn < g1; pn++ {
				widen(&bw[(pn-g0)*pw], &b.Data[pn*ps+pc*bf16Panel], kcb/2)
			}
			be := beta
			if pc > 0 {
				be = 1
			}
			for i0 := r0; i0 < r1; i0 += mb {
				i1 := min(i0+mb, r1)
				if a.Stride == ld && kcb == k2 { // whole rows, one call
					FromBF16(aw[:(i1-i0)*ld], a.Data[i0*ld:i1*ld])
				} else {
					for i := i0; i < i1; i++ {
						FromBF16(aw[(i-i0)*ld:(i-i0)*ld+kcb], a.Data[i*a.Stride+pc:i*a.Stride+pc+kcb])
					}
				}
				for pn := g0; pn < g1; pn++ {
					bp := bw[(pn-g0)*pw:]
					j0 := pn * bf16Panel
					cols := min(bf16Panel, n-j0)
					for s := 0; s < cols; s += sub {
						gemmTiles(w, p, false, i1-i0, min(sub, cols-s), kcb, aw, 0, ld, ld, bp[s:], bf16Panel, c, i0*ldc+j0+s, ldc, alpha, be)
					}
				}
			}
		}
	}
	gemmPool.Put(w)
}

// bf16FewRows is the most rows bf16BlockWide gives bf16FewWide. Widening
// a panel costs about as much as widening its pairs in registers for two
// tiles of 6 rows; for fewer rows (decoding a few sequences), the
// registers are cheaper.
const bf16FewRows = 2 * gemmMR

// bf16FewWide is bf16BlockWide for a few rows: their values are widened to
// float32, and the widening kernels (bf16W512) widen B's pairs in
// registers, by the same blocks of K with the same alpha and beta, so
// every row's result is bit for bit what bf16BlockWide gives it.
func bf16FewWide(a *BF16A, b *BF16B, r0, r1, p0, p1, kc int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	k2 := 2 * pairs
	w := gemmPool.Get().(*gemmWork)
	_, aw := w.bufs(0, (r1-r0)*k2)
	for i := r0; i < r1; i++ {
		FromBF16(aw[(i-r0)*k2:(i-r0+1)*k2], a.Data[i*a.Stride:i*a.Stride+k2])
	}
	full, rest := (r1-r0)/gemmMR, (r1-r0)%gemmMR
	for pc := 0; pc < k2; pc += kc {
		kcb := min(kc, k2-pc)
		be := beta
		if pc > 0 {
			be = 1
		}
		for pn := p0; pn < p1; pn++ {
			bp := b.Data[pn*ps+pc*bf16Panel:]
			j0 := pn * bf16Panel
			mask := panelMask(n - j0)
			if full > 0 {
				bf16W512[gemmMR-1](kcb/2, &aw[pc], k2, &bp[0], &c[r0*ldc+j0], ldc, alpha, be, mask, full, gemmMR*k2)
			}
			if rest > 0 {
				r := full * gemmMR
				bf16W512[rest-1](kcb/2, &aw[r*k2+pc], k2, &bp[0], &c[(r0+r)*ldc+j0], ldc, alpha, be, mask, 1, 0)
			}
		}
	}
	gemmPool.Put(w)
}
