//go:build !purego

package kernels

// amxBF16 is the AMX-BF16 micro-kernel (amx_amd64.s): blocks blocks of 32
// rows of C by halves halves of 32 columns of a panel, over steps·32
// values of K; lda is in bytes, ldc in float32, mask selects the columns
// written, tmp holds 32×32 float32 and cfg is amxConfig. mode is
// amxMode's; rows (at most 32) is the rows of each block written in
// mode 0.
//
//go:noescape
func amxBF16(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, blocks int, tmp *float32, cfg *byte, mode, rows, halves int)

// amxRowsFMA computes rows (at least 1) rows of C against one packed B
// panel (all 64 columns, written where mask is set) over steps·32 values
// of K, bit for bit as amxBF16 computes a row of a block (see
// amx_amd64.s), on AVX-512 FMAs; lda is in bytes, ldc in float32.
//
//go:noescape
func amxRowsFMA(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, rows int)

// amxConfig is the tile configuration amxBF16 loads: palette 1, and all
// eight tiles 16 rows of 64 bytes.
var amxConfig = func() (cfg [64]byte) {
	cfg[0] = 1
	for i := range 8 {
		cfg[16+2*i] = 64
		cfg[48+i] = 16
	}
	return cfg
}()

// amxRows is the rows of C one AMX micro-kernel call computes per block.
const amxRows = 32

// amxFMARows is the most rows beyond the last whole block of 32 that
// amxBlock sends to amxRowsFMA rather than through the tiles padded to a
// block: one. A single row of 256 values against 768 columns took 4.1 µs
// on amxRowsFMA and 6.4 on the tiles, two rows 7.8 against 6.5 (Intel
// Xeon, family 6 model 207, one thread, the fast AMX level).
const amxFMARows = 1

// amxChunkBytes bounds the bytes of A that bf16BlockAMX runs against all
// its panels before it moves on (at least one block of 32 rows): a chunk
// stays in L2 (2 MiB a core on the CPUs with AMX) while the panels go by.
const amxChunkBytes = 512 << 10

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

// bf16BlockAMX is the AMX path's block: rows r0…r1 of C for panels p0…p1
// of B. AMX takes K by 16 pairs at a time; with fewer pairs the block runs
// on the AVX512-BF16 kernels.
func bf16BlockAMX(a BF16A, b BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	if pairs < 16 {
		bf16BlockK512(a, b, r0, r1, p0, p1, alpha, beta, c, ldc)
		return
	}
	tail := amxTail(&a, r0, r1, pairs/16*32)
	// Rows by chunks whose A stays in L2 while the panels go by, each panel
	// in L1 while the chunk's blocks go by.
	mc := max(amxRows, amxChunkBytes/(4*pairs)/amxRows*amxRows)
	for c0 := r0; c0 < r1; c0 += mc {
		c1 := min(c0+mc, r1)
		for pn := p0; pn < p1; pn++ {
			bp := b.Data[pn*ps : pn*ps+pairs*2*bf16Panel]
			j0 := pn * bf16Panel
			cols := min(bf16Panel, n-j0)
			amxBlock(&a, &tail, bp, pairs, c0, c1, cols, panelMask(n-j0), alpha, beta, c[j0:], ldc)
		}
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
	if rest <= amxFMARows {
		return BF16A{}
	}
	rt := r1 - rest
	t := BF16A{M: amxRows, K: k, Stride: k, Data: packBufs.getN(amxRows * k)}
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
	switch {
	case rest > amxFMARows:
		amxBF16(steps, &tail.Data[0], 2*tail.Stride, &bp[0], &c[rt*ldc], ldc,
			alpha, beta, mask, 1, &tmp[0], &amxConfig[0], 0, rest, halves)
	case rest > 0:
		amxRowsFMA(steps, &a.Data[rt*a.Stride], 2*a.Stride, &bp[0], &c[rt*ldc], ldc, alpha, beta, mask, rest)
	}
	if steps*16 < pairs {
		bf16K512Rows(a, bp, steps*16, pairs, r0, r1, mask, alpha, 1, c, ldc)
	}
}
