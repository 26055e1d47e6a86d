package fft

const haveAsm = true

// radix4AVX512 is one radix-4 Stockham pass (see radix4) over float32 data:
// for k < m and q < s (s a multiple of 16),
// y[q + s·(4k + r)] = W^{r·k}·Σ_j x[q + s·(k + j·m)]·(−i)^{j·r}, with the
// twiddles W^{k}, W^{2k}, W^{3k} read interleaved from tw[6k…6k+5].
//
//go:noescape
func radix4AVX512(yr, yi, xr, xi, tw *float32, s, m int)

// radix2AVX512 is one radix-2 Stockham pass (see radix2) over float32 data,
// s a multiple of 16, twiddle W^k at tw[2k], tw[2k+1].
//
//go:noescape
func radix2AVX512(yr, yi, xr, xi, tw *float32, s, m int)

// twiddleAVX512 multiplies cnt rows of w float32 elements (w a multiple of
// 16) by one complex factor each: d[j·w+q] = s[j·w+q]·(tw[2j] + i·tw[2j+1]).
//
//go:noescape
func twiddleAVX512(dr, di, sr, si, tw *float32, w, cnt int)

// realPackAVX512 is the packing loop of RealPlan.Batch for n elements
// (a multiple of 16) of one row: with x = ((r0+r1)/2, (i1−i0)/2),
// y = ((r2+r3)/2, (i3−i2)/2), a = x+y, b = (x−y)·(c + i·s), it writes
// or = Im a + Re b and oi = Re a − Im b.
//
//go:noescape
func realPackAVX512(or, oi, r0, i0, r1, i1, r2, i2, r3, i3 *float32, n int, c, s float32)

// realPackRowsAVX512 is realPackAVX512 for cnt consecutive k and n = 16
// columns: r0 and r2 point at rows k and k+M (stepping forward by ld
// floats), r1 and r3 at rows n−k and M−k (stepping back), the imaginary
// parts lie dz bytes past the real ones, c and s point at the k-th
// factors, and row j of the output goes to or[16j…], oi[16j…].
//
//go:noescape
func realPackRowsAVX512(or, oi, r0, r1, r2, r3, c, s *float32, dz, ld, cnt int)

// copyRowsAVX512 copies rows rows of n float32 elements (n a multiple of
// 16): row r from sr + r·ss to dr + r·ds and from si + r·ss to di + r·ds
// (strides in elements).
//
//go:noescape
func copyRowsAVX512(dr, di, sr, si *float32, n, rows, ds, ss int)

// realPackPairAVX512 is realPackRowsAVX512 that also writes, for each k,
// the output of M−k (the same four rows) at or2, which steps backward; the
// imaginary outputs lie do bytes past the real ones.
//
//go:noescape
func realPackPairAVX512(or, or2, r0, r1, r2, r3, c, s *float32, dz, do, ld, cnt int)
