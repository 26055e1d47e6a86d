//go:build !purego

package kernels

import "math"

//go:generate go run ./internal/vecgen

// vecByPath holds the float32 row primitives of each path.
var vecByPath = [...]*vec32{PathGo: goVec, PathAVX2: asmVec(false).table(), PathAVX512: asmVec(true).table()}

// vecTab holds the constants of vec_amd64.s, each repeated in 16 lanes, in
// the order of tab in internal/vecgen.
var vecTab = func() (t [21][16]float32) {
	for i, v := range [...]float32{
		expLo, expHi, expLog2e, expShift, expLn2Hi, expLn2Lo,
		expC4, expC3, expC2, expC1, expC0, 1, math.Float32frombits(127), float32(math.Inf(-1)),
		geluA, geluB, geluTMax, geluK1, geluK2, geluXMin, geluXMax,
	} {
		for j := range t[i] {
			t[i][j] = v
		}
	}
	return t
}()

// asmVec is an assembly path: AVX-512 when true, else AVX2+FMA. Its methods
// run the assembly on the whole vectors of their input and handle the rest:
// exp-based kernels run the tail through the assembly in a padded stack
// buffer (so every element gets the same algorithm), the others finish in
// plain Go.
type asmVec bool

func (a asmVec) lanes() int {
	if a {
		return 16
	}
	return 8
}

// body returns the length of the whole-vector part of n elements.
func (a asmVec) body(n int) int { return n &^ (a.lanes() - 1) }

func (a asmVec) table() *vec32 {
	return &vec32{
		exp: a.exp, expSub: a.expSub, max: a.max, sum: a.sum,
		scale: a.scale, subMul: a.subMul, add: a.add, addTo: a.addTo,
		gelu: a.gelu, geluBack: a.geluBack,
		sumSqDev: a.sumSqDev, lnAffine: a.lnAffine, lnBackDots: a.lnBackDots,
		lnBackDx: a.lnBackDx, lnBackW: a.lnBackW, adamW: a.adamW,
		expSubRows: a.expSubRows, subMulRows: a.subMulRows, onlineSoftmax: a.onlineSoftmax,
		scaleRows: a.scaleRows,
	}
}

func (a asmVec) exp(dst, src []float32) {
	n := len(src)
	dst = dst[:n]
	b := a.body(n)
	if b > 0 {
		a.expRaw(&dst[0], &src[0], b)
	}
	if b < n {
		var buf [16]float32
		copy(buf[:], src[b:])
		a.expRaw(&buf[0], &buf[0], a.lanes())
		copy(dst[b:], buf[:n-b])
	}
}

// expSub runs the tail as one more vector, padded with −Inf (exp 0), in
// the same lane sums as the whole vectors, so that the sum does not change
// when entries of exp 0 (masked keys) are appended to src.
func (a asmVec) expSub(dst, src []float32, m float32) float32 {
	n := len(src)
	dst = dst[:n]
	b := a.body(n)
	var d0, s0 *float32
	if b > 0 {
		d0, s0 = &dst[0], &src[0]
	}
	if b == n {
		return a.expSubRaw(d0, s0, b, m, nil)
	}
	var buf [16]float32
	copy(buf[:], src[b:])
	for i := n - b; i < len(buf); i++ {
		buf[i] = float32(math.Inf(-1))
	}
	s := a.expSubRaw(d0, s0, b, m, &buf[0])
	copy(dst[b:], buf[:n-b])
	return s
}

func (a asmVec) gelu(dst, src []float32) {
	n := len(src)
	dst = dst[:n]
	b := a.body(n)
	if b > 0 {
		a.geluRaw(&dst[0], &src[0], b)
	}
	if b < n {
		var buf [16]float32
		copy(buf[:], src[b:])
		a.geluRaw(&buf[0], &buf[0], a.lanes())
		copy(dst[b:], buf[:n-b])
	}
}

func (a asmVec) geluBack(dinp, inp, dout []float32) {
	n := len(dinp)
	inp, dout = inp[:n], dout[:n]
	b := a.body(n)
	if b > 0 {
		a.geluBackRaw(&dinp[0], &inp[0], &dout[0], b)
	}
	if b < n {
		var d, x, g [16]float32
		copy(d[:], dinp[b:])
		copy(x[:], inp[b:])
		copy(g[:], dout[b:])
		a.geluBackRaw(&d[0], &x[0], &g[0], a.lanes())
		copy(dinp[b:], d[:n-b])
	}
}

func (a asmVec) max(x []float32) float32 {
	b := a.body(len(x))
	if b == 0 {
		return maxGo(x)
	}
	mx := a.maxRaw(&x[0], b)
	if b < len(x) {
		if v := maxGo(x[b:]); v > mx {
			mx = v
		}
	}
	return mx
}

func (a asmVec) sum(x []float32) float32 {
	b := a.body(len(x))
	if b == 0 {
		return sumGo(x)
	}
	s := a.sumRaw(&x[0], b)
	if b < len(x) {
		s += sumGo(x[b:])
	}
	return s
}

func (a asmVec) scale(dst []float32, s float32) {
	b := a.body(len(dst))
	if b > 0 {
		a.scaleRaw(&dst[0], b, s)
	}
	if b < len(dst) {
		scaleGo(dst[b:], s)
	}
}

func (a asmVec) subMul(dst, p []float32, d float32) {
	p = p[:len(dst)]
	b := a.body(len(dst))
	if b > 0 {
		a.subMulRaw(&dst[0], &p[0], b, d)
	}
	subMulGo(dst[b:], p[b:], d)
}

func (a asmVec) add(dst, x, y []float32) {
	x, y = x[:len(dst)], y[:len(dst)]
	b := a.body(len(dst))
	if b > 0 {
		a.addRaw(&dst[0], &x[0], &y[0], b)
	}
	addGo(dst[b:], x[b:], y[b:])
}

func (a asmVec) addTo(dst, x []float32) {
	x = x[:len(dst)]
	b := a.body(len(dst))
	if b > 0 {
		a.addToRaw(&dst[0], &x[0], b)
	}
	addToGo(dst[b:], x[b:])
}

func (a asmVec) sumSqDev(x []float32, m float32) float32 {
	b := a.body(len(x))
	s := sumSqDevGo(x[b:], m)
	if b > 0 {
		s += a.sumSqDevRaw(&x[0], b, m)
	}
	return s
}

func (a asmVec) lnAffine(out, x, w, bias []float32, m, s float32) {
	n := len(out)
	x, w, bias = x[:n], w[:n], bias[:n]
	b := a.body(n)
	if b > 0 {
		a.lnAffineRaw(&out[0], &x[0], &w[0], &bias[0], b, m, s)
	}
	lnAffineGo(out[b:], x[b:], w[b:], bias[b:], m, s)
}

func (a asmVec) lnBackDots(g, x, w []float32, m, s float32) (sd, sdx float32) {
	n := len(g)
	x, w = x[:n], w[:n]
	b := a.body(n)
	sd, sdx = lnBackDotsGo(g[b:], x[b:], w[b:], m, s)
	if b > 0 {
		vd, vdx := a.lnBackDotsRaw(&g[0], &x[0], &w[0], b, m, s)
		sd, sdx = sd+vd, sdx+vdx
	}
	return sd, sdx
}

func (a asmVec) lnBackDx(dx, g, x, w []float32, m, s, sd, sdx float32) {
	n := len(dx)
	g, x, w = g[:n], x[:n], w[:n]
	b := a.body(n)
	if b > 0 {
		a.lnBackDxRaw(&dx[0], &g[0], &x[0], &w[0], b, m, s, sd, sdx)
	}
	lnBackDxGo(dx[b:], g[b:], x[b:], w[b:], m, s, sd, sdx)
}

func (a asmVec) lnBackW(dw, db, g, x []float32, m, s float32) {
	n := len(dw)
	db, g, x = db[:n], g[:n], x[:n]
	b := a.body(n)
	if b > 0 {
		a.lnBackWRaw(&dw[0], &db[0], &g[0], &x[0], b, m, s)
	}
	lnBackWGo(dw[b:], db[b:], g[b:], x[b:], m, s)
}

func (a asmVec) adamW(p, g, m, v []float32, c adamC) {
	n := len(p)
	g, m, v = g[:n], m[:n], v[:n]
	b := a.body(n)
	if b > 0 {
		a.adamWRaw(&p[0], &g[0], &m[0], &v[0], b, c.b1, c.a1, c.b2, c.a2, c.ib1, c.ib2, c.lr, c.eps, c.wd)
	}
	adamWGo(p[b:], g[b:], m[b:], v[b:], c)
}

// dot32 and axpy32 are Dot and Axpy for float32 with the path switch and the
// assembly call inlined: attention calls them per head-sized row, where the
// table's extra calls would cost as much as the arithmetic.
func dot32(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	switch path {
	case PathAVX512:
		if b := n &^ 15; b > 0 {
			s := dotVecAVX512(&x[0], &y[0], b)
			if b < n {
				s += dotGo(x[b:], y[b:])
			}
			return s
		}
	case PathAVX2:
		if b := n &^ 7; b > 0 {
			s := dotVecAVX2(&x[0], &y[0], b)
			if b < n {
				s += dotGo(x[b:], y[b:])
			}
			return s
		}
	}
	return dotGo(x, y)
}

func axpy32(dst []float32, a float32, x []float32) {
	n := len(dst)
	x = x[:n]
	b := 0
	switch path {
	case PathAVX512:
		if b = n &^ 15; b > 0 {
			axpyVecAVX512(&dst[0], &x[0], b, a)
		}
	case PathAVX2:
		if b = n &^ 7; b > 0 {
			axpyVecAVX2(&dst[0], &x[0], b, a)
		}
	}
	if b < n {
		axpyGo(dst[b:], a, x[b:])
	}
}

// The tile-row methods run the row-loop assembly when the rows are whole
// vectors, else the row methods above on each row.

// whole says n > 0 elements are whole vectors.
func (a asmVec) whole(n int) bool { return n > 0 && a.body(n) == n }

func (a asmVec) expSubRows(x []float32, rows, cols int, m []float32, ms int) {
	if a.whole(cols) {
		a.expSubRowsRaw(&x[0], cols, rows, &m[0], ms, nil)
		return
	}
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		a.expSub(row, row, m[r*ms])
	}
}

func (a asmVec) subMulRows(dst, p []float32, rows, cols int, d []float32, ds int) {
	if a.whole(cols) {
		a.subMulRowsRaw(&dst[0], &p[0], cols, rows, &d[0], ds)
		return
	}
	for r := 0; r < rows; r++ {
		a.subMul(dst[r*cols:(r+1)*cols], p[r*cols:(r+1)*cols], d[r*ds])
	}
}

func (a asmVec) scaleRows(x []float32, rows, cols, ld int, s []float32) {
	b := a.body(cols)
	if b > 0 {
		a.scaleRowsRaw(&x[0], b, rows, ld, &s[0])
	}
	if b < cols {
		for r := 0; r < rows; r++ {
			scaleGo(x[r*ld+b:r*ld+cols], s[r])
		}
	}
}

// onlineSoftmax runs on chunks of up to 64 rows: their maxima, then their
// exps and sums, then their factors α and running statistics. A row with
// no finite score gets the maximum +Inf, so that its exps are all 0.
func (a asmVec) onlineSoftmax(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32) {
	a.onlineSoftmaxTo(x, rows, cols, m, l, ms, alpha, nil)
}

// onlineSoftmaxTo is onlineSoftmax with the exps, when out is not nil,
// rounded to bf16 into out's rows (a packed A [rows, cols] with whole
// vectors a row) by the AVX-512 conversion kernel instead of written over
// x: x keeps the scores.
func (a asmVec) onlineSoftmaxTo(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32, out *BF16A) {
	whole := a.whole(cols)
	var mx, sums, al [64]float32
	var empty [64]bool
	for r0 := 0; r0 < rows; r0 += len(mx) {
		n := min(len(mx), rows-r0)
		tile := x[r0*cols : (r0+n)*cols]
		if whole {
			a.maxRowsRaw(&tile[0], cols, n, &mx[0])
		} else {
			for r := range n {
				mx[r] = a.max(tile[r*cols : (r+1)*cols])
			}
		}
		for r := range n {
			mx[r] = max(m[(r0+r)*ms], mx[r])
			if empty[r] = math.IsInf(float64(mx[r]), -1); empty[r] {
				mx[r] = float32(math.Inf(1))
			}
		}
		switch {
		case out != nil:
			expSubRowsBF16AVX512(&out.Data[r0*out.Stride], out.Stride, &tile[0], cols/16, n, &mx[0], &sums[0])
		case whole:
			a.expSubRowsRaw(&tile[0], cols, n, &mx[0], 1, &sums[0])
		default:
			for r := range n {
				row := tile[r*cols : (r+1)*cols]
				sums[r] = a.expSub(row, row, mx[r])
			}
		}
		// α = exp(m − m') for the chunk in one vector exp: exactly 1 where
		// the maximum stays (exp 0), 0 for a row's first tile (exp −Inf).
		for r := range n {
			al[r] = 0
			if !empty[r] {
				al[r] = m[(r0+r)*ms] - mx[r]
			}
		}
		a.expRaw(&al[0], &al[0], (n+a.lanes()-1)&^(a.lanes()-1))
		for r := range n {
			if empty[r] {
				alpha[r0+r] = 1
				continue
			}
			i := (r0 + r) * ms
			l[i] = l[i]*al[r] + sums[r]
			m[i] = mx[r]
			alpha[r0+r] = al[r]
		}
	}
}
