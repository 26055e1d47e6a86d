package kernels

// The blocked GEMM driver (one goroutine), after Goto & van de Geijn, "Anatomy
// of high-performance matrix multiplication" (2008). Loops, outermost first:
//
//	jc: nc columns of C; pc: kc of the k dimension. Pack op(B)[pc:pc+kc,
//	    jc:jc+nc] into panels of nr columns (the block stays in L2).
//	ic: mc rows; op(A)[ic:ic+mc, pc:pc+kc] stays in L2. It is read in
//	    place, except that a transposed A is packed (row-major for the Go
//	    kernel, into 6-wide column micro-panels for wide products).
//	jr: one panel of nr columns of the packed B.
//	ir: MR rows; the micro-kernel updates an MR×nr tile of C (the
//	    assembly kernels run this loop themselves).
//
// beta is applied at the first pc block; later blocks accumulate (beta=1).

// Block sizes, for a 48 KiB L1d and 1 MiB L2 per core (Zen 5); the speed
// is flat around them (kc from 256 to 768, or either budget halved).
const (
	gemmMR      = 6         // rows per micro-tile on every path
	gemmGoPanel = 32        // columns per panel on the pure-Go path
	gemmKC      = 512       // target k block (k ≤ 640 is not split: C is written once)
	gemmPackA   = 64 << 10  // A block budget, in floats (256 KiB of L2)
	gemmPackB   = 128 << 10 // packed-B block budget, in floats (512 KiB of L2)
)

// gemmBlocked computes C = alpha·op(A)·op(B) + beta·C on the calling
// goroutine with micro-kernels of path p, using w's buffers. Arguments are
// already checked and m, n > 0.
func gemmBlocked(w *gemmWork, p Path, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	nr, kc := gemmPanel(p), gemmKBlock(k)
	nc := min(max(nr, gemmPackB/kc/nr*nr), (n+nr-1)/nr*nr)
	mc := min(max(gemmMR, gemmPackA/kc/gemmMR*gemmMR), (m+gemmMR-1)/gemmMR*gemmMR)
	// A transposed: the Go kernel needs rows, so pack op(A) row-major. The
	// assembly kernels read Aᵀ in place, but when at least 256 columns reuse
	// it (so packing costs ≤ 1/256 of the FMAs), packing it into gemmMR-wide
	// column micro-panels pays: it dodges the cache-set aliasing of a
	// power-of-two lda.
	packA := transA && !gemmTransKernels(p)
	panelA := transA && !packA && n >= 256
	// Packed A has row stride kc+8, not kc: with a stride of a multiple of
	// 4 KiB the rows of a block would all share one L1 set.
	ka := kc + 8
	na := 0
	if packA || panelA {
		na = mc * ka
	}
	// A B of one panel's width whose rows are already packed rows (row
	// stride = the packed width, as attention's heads of 16–64 columns)
	// is read in place.
	inPlace := !transB && n <= nr && n == gemmPackWidth(p, n) && ldb == n
	// A weight gradient's B (an activation, k rows of n columns) is read in
	// place with its row stride by the AVX-512 kernels, panel by panel of
	// whole vectors, rather than copied into panels.
	strided := !inPlace && gemmStridedB(p, transA, transB, n, ldb)
	bp, ap := w.bufs(kc*nc, na)
	for jc := 0; jc < n; jc += nc {
		ncb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kcb := min(kc, k-pc)
			bpan, bstep, bld := bp, kcb, 0
			switch {
			case inPlace:
				bpan = b[pc*ldb:]
			case strided:
				bpan, bstep, bld = b[pc*ldb+jc:], 1, ldb
			default:
				packB(bp, p, transB, b, ldb, pc, kcb, jc, ncb)
			}
			be := beta
			if pc > 0 {
				be = 1
			}
			for ic := 0; ic < m; ic += mc {
				mcb := min(mc, m-ic)
				// Row ir of this block starts at as[ao+ir·rs].
				as, ao, al, rs := a, ic*lda+pc, lda, lda
				switch {
				case packA:
					packAT(ap, a, lda, pc, kcb, ic, mcb, ka)
					as, ao, al, rs = ap, 0, ka, ka
				case panelA:
					packATPanels(ap, a, lda, pc, kcb, ic, mcb, ka)
					as, ao, al, rs = ap, 0, gemmMR, ka
				case transA:
					ao, rs = pc*lda+ic, 1
				}
				for jr := 0; jr < ncb; jr += nr {
					cols := min(nr, ncb-jr)
					ld := bld
					if ld == 0 {
						ld = gemmPackWidth(p, cols)
					}
					gemmTiles(w, p, transA && !packA, mcb, cols, kcb, as, ao, al, rs, bpan[jr*bstep:], ld, c, ic*ldc+jc+jr, ldc, alpha, be)
				}
			}
		}
	}
}

// gemmKBlock is the k block of a product of k: k itself up to 1.25·gemmKC,
// else k in equal blocks of at most gemmKC.
func gemmKBlock(k int) int {
	if k <= gemmKC+gemmKC/4 {
		return k
	}
	nb := (k + gemmKC - 1) / gemmKC
	return (k + nb - 1) / nb
}

// gemmStridedB says whether gemmBlocked reads op(B) = B in place, rows ldb
// apart, on path p: on AVX-512 (whose kernels read whole vectors, so n must
// be a multiple of 16) for transposed-A products, the weight gradients
// dW = dYᵀ·X, whose B is an activation of many rows, read once per block
// of A rows; and only where B's rows are less than 4 KiB apart. At 4 KiB
// they share a few cache sets, and reading them in place ran at about half
// the speed of packing them (BenchmarkGemmTN256x1024x4096, 2 threads, on an
// Intel Xeon, family 6 model 207); at 1–3 KiB it runs up to a tenth faster
// than packing (BenchmarkGemmTN256x256x4096).
func gemmStridedB(p Path, transA, transB bool, n, ldb int) bool {
	return p == PathAVX512 && transA && !transB && n%16 == 0 && ldb*4 < 4096
}

// gemmPanel is the panel width (columns per micro-tile) of path p.
func gemmPanel(p Path) int {
	switch p {
	case PathAVX512:
		return 64
	case PathAVX2:
		return 16
	}
	return gemmGoPanel
}

// gemmPackWidth is the packed row length of a panel with cols ≤ nr columns:
// AVX-512 kernels read whole ZMM vectors, AVX2 always a full 16.
func gemmPackWidth(p Path, cols int) int {
	switch p {
	case PathAVX512:
		return (cols + 15) &^ 15
	case PathAVX2:
		return 16
	}
	return cols
}

// packB copies op(B)[pc:pc+kc, jc:jc+nc] into dst as consecutive panels of nr
// columns; panel q starts at q·nr·kc and holds kc rows of gemmPackWidth
// floats (zero-padded past the last column).
func packB(dst []float32, p Path, transB bool, b []float32, ldb, pc, kc, jc, nc int) {
	nr := gemmPanel(p)
	for j0 := 0; j0 < nc; j0 += nr {
		cols := min(nr, nc-j0)
		pw := gemmPackWidth(p, cols)
		d := dst[j0*kc : j0*kc+kc*pw]
		if !transB {
			for q := 0; q < kc; q++ {
				o := (pc+q)*ldb + jc + j0
				row := d[q*pw : q*pw+pw]
				copy(row, b[o:o+cols])
				clear(row[cols:])
			}
			continue
		}
		// op(B)[q][j] = B[j][q]: gather with AVX-512, or read rows of B and
		// scatter into columns, 16 rows of the panel (4 KiB, L1-resident) at
		// a time.
		done := packBT(p, d, pw, b, ldb, pc, kc, jc+j0, cols)
		for q0 := 0; q0 < kc && done < cols; q0 += 16 {
			qn := min(16, kc-q0)
			dq := d[q0*pw : (q0+qn)*pw]
			for j := done; j < cols; j++ {
				o := (jc+j0+j)*ldb + pc + q0
				for q, v := range b[o : o+qn] {
					dq[q*pw+j] = v
				}
			}
		}
		if cols < pw {
			for q := 0; q < kc; q++ {
				clear(d[q*pw+cols : q*pw+pw])
			}
		}
	}
}

// packAT copies rows ic..ic+mc of op(A) = Aᵀ, columns pc..pc+kc, into dst as
// an mc×kc row-major block with row stride rs ≥ kc, so the kernels always
// read rows of op(A).
func packAT(dst, a []float32, lda, pc, kc, ic, mc, rs int) {
	for q := 0; q < kc; q++ {
		o := (pc+q)*lda + ic
		for r, v := range a[o : o+mc] {
			dst[r*rs+q] = v
		}
	}
}

// packATPanels copies rows ic..ic+mc of op(A) = Aᵀ, columns pc..pc+kc, into
// dst as micro-panels of gemmMR rows: the panel of row ir starts at ir·rs
// (rs ≥ kc) and holds, for each q < kc, op(A)[ir..ir+gemmMR][q] contiguously
// (the layout the transposed-A kernels read with lda = gemmMR). Rows past mc
// are not written and not read.
func packATPanels(dst, a []float32, lda, pc, kc, ic, mc, rs int) {
	done := packATFull(dst, a, lda, pc, kc, ic, mc, rs)
	full := mc / gemmMR * gemmMR
	for q := 0; q < kc; q++ {
		src := a[(pc+q)*lda+ic : (pc+q)*lda+ic+mc]
		o := q * gemmMR
		for ir := done; ir < full; ir += gemmMR {
			s := src[ir : ir+gemmMR : ir+gemmMR]
			d := dst[ir*rs+o : ir*rs+o+gemmMR : ir*rs+o+gemmMR]
			d[0], d[1], d[2], d[3], d[4], d[5] = s[0], s[1], s[2], s[3], s[4], s[5]
		}
		if full < mc {
			copy(dst[full*rs+o:], src[full:])
		}
	}
}

// scaleC sets C = beta·C (C = 0 when beta is 0, so NaNs do not propagate).
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(ci)
		case 1:
		default:
			for j := range ci {
				ci[j] *= beta
			}
		}
	}
}

// tileGo is the pure-Go micro-kernel: C[co+r·ldc+j] = alpha·Σ_q
// A[ao+r·lda+q]·bp[q·cols+j] + beta·C[...] for r < mr, j < cols. It keeps
// 2×4 blocks of the tile in scalar registers.
func tileGo(w *gemmWork, mr, cols, kc int, a []float32, ao, lda int, bp []float32, c []float32, co, ldc int, alpha, beta float32) {
	acc := w.tile[:mr*cols]
	bp = bp[:kc*cols]
	r := 0
	for ; r+2 <= mr; r += 2 {
		a0 := a[ao+r*lda : ao+r*lda+kc]
		a1 := a[ao+(r+1)*lda : ao+(r+1)*lda+kc]
		j := 0
		for ; j+4 <= cols; j += 4 {
			var s00, s01, s02, s03, s10, s11, s12, s13 float32
			for q, x0 := range a0 {
				x1 := a1[q]
				b := bp[q*cols+j : q*cols+j+4 : q*cols+j+4]
				s00 += x0 * b[0]
				s01 += x0 * b[1]
				s02 += x0 * b[2]
				s03 += x0 * b[3]
				s10 += x1 * b[0]
				s11 += x1 * b[1]
				s12 += x1 * b[2]
				s13 += x1 * b[3]
			}
			t := acc[r*cols+j : r*cols+j+4]
			t[0], t[1], t[2], t[3] = s00, s01, s02, s03
			t = acc[(r+1)*cols+j : (r+1)*cols+j+4]
			t[0], t[1], t[2], t[3] = s10, s11, s12, s13
		}
		for ; j < cols; j++ {
			tileDot(acc, r, j, cols, a0, bp)
			tileDot(acc, r+1, j, cols, a1, bp)
		}
	}
	for ; r < mr; r++ {
		ar := a[ao+r*lda : ao+r*lda+kc]
		for j := 0; j < cols; j++ {
			tileDot(acc, r, j, cols, ar, bp)
		}
	}
	mergeTile(acc, cols, mr, cols, c, co, ldc, alpha, beta)
}

// tileDot sets acc[r·cols+j] = Σ_q ar[q]·bp[q·cols+j].
func tileDot(acc []float32, r, j, cols int, ar, bp []float32) {
	var s float32
	for q, x := range ar {
		s += x * bp[q*cols+j]
	}
	acc[r*cols+j] = s
}

// mergeTile sets C[co+r·ldc+j] = alpha·acc[r·lacc+j] + beta·C[...] for
// r < mr, j < cols.
func mergeTile(acc []float32, lacc, mr, cols int, c []float32, co, ldc int, alpha, beta float32) {
	for r := 0; r < mr; r++ {
		cr := c[co+r*ldc : co+r*ldc+cols]
		ar := acc[r*lacc : r*lacc+cols]
		if beta == 0 {
			for j := range cr {
				cr[j] = alpha * ar[j]
			}
			continue
		}
		for j := range cr {
			cr[j] = alpha*ar[j] + beta*cr[j]
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
