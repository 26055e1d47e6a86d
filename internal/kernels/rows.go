package kernels

import "math"

// Tile row helpers: the row helpers of vec.go applied to each row of a
// rows×cols row-major tile in one call, for attention's score tiles (on
// AVX-512 and AVX2, one assembly call per tile when the rows are whole
// vectors). A per-row operand is read at stride ms (m[r·ms]), so a tile of
// strided queries reads its rows' statistics in place. They run on the
// calling goroutine; every row gets, bit for bit, the float32 result that
// ExpSub, Max and SubMul give it on the same path.

// ExpSubRows sets each row x_r of the rows×cols tile x to exp(x_r − m[r·ms])
// (ExpSub in place, the sums dropped). ExpSubRows panics if x or m is short.
func ExpSubRows[F Float](x []F, rows, cols int, m []F, ms int) {
	if rows == 0 {
		return
	}
	_, _ = x[:rows*cols], m[(rows-1)*ms]
	if x32, ok := any(x).([]float32); ok {
		vecs().expSubRows(x32, rows, cols, any(m).([]float32), ms)
		return
	}
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		ExpSub(row, row, m[r*ms])
	}
}

// SubMulRows sets each row dst_r of the rows×cols tile dst to
// p_r ⊙ (dst_r − d[r·ds]) (SubMul per row). SubMulRows panics if dst, p or
// d is short.
func SubMulRows[F Float](dst, p []F, rows, cols int, d []F, ds int) {
	if rows == 0 {
		return
	}
	_, _, _ = dst[:rows*cols], p[:rows*cols], d[(rows-1)*ds]
	if d32, ok := any(dst).([]float32); ok {
		vecs().subMulRows(d32, any(p).([]float32), rows, cols, any(d).([]float32), ds)
		return
	}
	for r := 0; r < rows; r++ {
		SubMul(dst[r*cols:(r+1)*cols], p[r*cols:(r+1)*cols], d[r*ds])
	}
}

// ScaleRows multiplies each row x_r = x[r·ld : r·ld+cols] of a strided
// tile by s[r] (a row scaled by 1 stays bit for bit): attention's output
// rows by OnlineSoftmax's factors. ScaleRows panics if x or s is short.
func ScaleRows[F Float](x []F, rows, cols, ld int, s []F) {
	if rows == 0 || cols == 0 {
		return
	}
	_, _ = x[:(rows-1)*ld+cols], s[:rows]
	if x32, ok := any(x).([]float32); ok {
		vecs().scaleRows(x32, rows, cols, ld, any(s).([]float32))
		return
	}
	for r, sr := range s[:rows] {
		for c := range x[r*ld : r*ld+cols] {
			x[r*ld+c] *= sr
		}
	}
}

// OnlineSoftmax takes the rows×cols score tile x through one step of an
// online softmax (FlashAttention). Row r has the running maximum m[r·ms] and
// the running sum l[r·ms] of the tiles before; with the new maximum
// m' = max(m, Max(x_r)) it sets x_r = exp(x_r − m'), l = l·α + Σ x_r and
// m = m', and stores α = exp(m − m') in alpha[r]: the factor by which the
// row's output so far must be scaled (exactly 1 when the maximum did not
// change). A row with no finite score yet (m' = −Inf) is set to zeros and
// keeps m and l, with α = 1. The float32 α has Exp's accuracy.
// OnlineSoftmax panics if x, m, l or alpha is short.
func OnlineSoftmax[F Float](x []F, rows, cols int, m, l []F, ms int, alpha []F) {
	if rows == 0 {
		return
	}
	_, _, _, _ = x[:rows*cols], m[(rows-1)*ms], l[(rows-1)*ms], alpha[:rows]
	if x32, ok := any(x).([]float32); ok {
		vecs().onlineSoftmax(x32, rows, cols, any(m).([]float32), any(l).([]float32), ms, any(alpha).([]float32))
		return
	}
	onlineRows(x, rows, cols, m, l, ms, alpha, Max[F], func(x []F, m F) F { return ExpSub(x, x, m) })
}

// onlineRows is OnlineSoftmax row by row with the row helpers rowMax and
// expSub (x = exp(x − m), returning the sum).
func onlineRows[F Float](x []F, rows, cols int, m, l []F, ms int, alpha []F, rowMax func([]F) F, expSub func([]F, F) F) {
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		mNew := max(m[r*ms], rowMax(row))
		if math.IsInf(float64(mNew), -1) {
			clear(row)
			alpha[r] = 1
			continue
		}
		alpha[r] = onlineSum(&m[r*ms], &l[r*ms], mNew, expSub(row, mNew))
	}
}

// onlineSum moves a row's running maximum *m to mNew and adds the tile's
// sum to its running sum *l, and returns α = exp(m − mNew).
func onlineSum[F Float](m, l *F, mNew, sum F) F {
	al := F(1)
	if *m != mNew {
		d := *m - mNew
		if d32, ok := any(d).(float32); ok {
			al = F(expf(d32))
		} else {
			al = F(math.Exp(float64(d)))
		}
		*l *= al
		*m = mNew
	}
	*l += sum
	return al
}

func expSubRowsGo(x []float32, rows, cols int, m []float32, ms int) {
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		expSubGo(row, row, m[r*ms])
	}
}

func subMulRowsGo(dst, p []float32, rows, cols int, d []float32, ds int) {
	for r := 0; r < rows; r++ {
		subMulGo(dst[r*cols:(r+1)*cols], p[r*cols:(r+1)*cols], d[r*ds])
	}
}

func scaleRowsGo(x []float32, rows, cols, ld int, s []float32) {
	for r, sr := range s[:rows] {
		scaleGo(x[r*ld:r*ld+cols], sr)
	}
}

func onlineSoftmaxGo(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32) {
	onlineRows(x, rows, cols, m, l, ms, alpha, maxGo, func(x []float32, m float32) float32 { return expSubGo(x, x, m) })
}
