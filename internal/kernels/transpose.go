package kernels

// Transpose sets dst[c·ldd + r] = src[r·lds + c] for the rows×cols block of
// src: the columns of src become rows of dst. On the AVX-512 path the
// float32 block moves in 16×16 tiles through registers, the edges in plain
// Go; the result is the same on every path. Transpose panics if dst or src
// is short.
func Transpose[F Float](dst []F, ldd int, src []F, lds int, rows, cols int) {
	transpose(dst, ldd, src, lds, rows, cols, false)
}

// TransposeAdd is Transpose adding into dst: dst[c·ldd + r] += src[r·lds + c],
// one rounding per element, the same on every path.
func TransposeAdd[F Float](dst []F, ldd int, src []F, lds int, rows, cols int) {
	transpose(dst, ldd, src, lds, rows, cols, true)
}

func transpose[F Float](dst []F, ldd int, src []F, lds int, rows, cols int, add bool) {
	if rows == 0 || cols == 0 {
		return
	}
	_, _ = dst[:(cols-1)*ldd+rows], src[:(rows-1)*lds+cols]
	r16, c16 := 0, 0
	if d32, ok := any(dst).([]float32); ok && path == PathAVX512 {
		r16, c16 = rows&^15, cols&^15
		s32 := any(src).([]float32)
		for r := 0; r < r16; r += 16 {
			for c := 0; c < c16; c += 16 {
				transpose16(&d32[c*ldd+r], ldd, &s32[r*lds+c], lds, add)
			}
		}
	}
	// The edges: columns c16… of every row, and rows r16… of the first
	// c16 columns.
	for r := 0; r < rows; r++ {
		c0 := c16
		if r >= r16 {
			c0 = 0
		}
		for c, v := range src[r*lds+c0 : r*lds+cols] {
			if add {
				dst[(c0+c)*ldd+r] += v
			} else {
				dst[(c0+c)*ldd+r] = v
			}
		}
	}
}
