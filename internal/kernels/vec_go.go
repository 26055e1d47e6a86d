package kernels

import "math"

// vec32 is one path's set of float32 row primitives. Callers check lengths;
// every slice argument has the length of the first one. (Dot and Axpy, the
// per-head-row helpers, skip the table: see dot32 and axpy32.)
type vec32 struct {
	exp      func(dst, src []float32)
	expSub   func(dst, src []float32, m float32) float32
	max      func(x []float32) float32
	sum      func(x []float32) float32
	scale    func(dst []float32, s float32)
	subMul   func(dst, p []float32, d float32) // dst = p·(dst − d)
	add      func(dst, a, b []float32)
	addTo    func(dst, a []float32)
	gelu     func(dst, src []float32)
	geluBack func(dinp, inp, dout []float32) // dinp = dout·GELU'(inp)
	// LayerNorm rows: xh = (x−m)·s.
	sumSqDev   func(x []float32, m float32) float32                    // Σ(x−m)²
	lnAffine   func(out, x, w, b []float32, m, s float32)              // out = xh·w + b
	lnBackDots func(g, x, w []float32, m, s float32) (sd, sdx float32) // Σ g·w, Σ g·w·xh
	lnBackDx   func(dx, g, x, w []float32, m, s, sd, sdx float32)      // dx += s·(g·w − sd − xh·sdx)
	lnBackW    func(dw, db, g, x []float32, m, s float32)              // dw += g·xh, db += g
	adamW      func(p, g, m, v []float32, c adamC)
	// Tile rows (rows.go): the row helpers on each row of a tile.
	expSubRows    func(x []float32, rows, cols int, m []float32, ms int)
	subMulRows    func(dst, p []float32, rows, cols int, d []float32, ds int)
	onlineSoftmax func(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32)
	scaleRows     func(x []float32, rows, cols, ld int, s []float32)
}

// adamC holds the float32 coefficients of one AdamW step: β1, 1−β1, β2,
// 1−β2, the reciprocal bias corrections, lr, eps and the weight decay.
type adamC struct{ b1, a1, b2, a2, ib1, ib2, lr, eps, wd float32 }

// vecs returns the primitives of the current path.
func vecs() *vec32 { return vecByPath[path] }

// goVec is the pure-Go path: float32 arithmetic and the same exp algorithm
// as the assembly. It is the fallback on every CPU.
var goVec = &vec32{
	exp:        expGo,
	expSub:     expSubGo,
	max:        maxGo,
	sum:        sumGo,
	scale:      scaleGo,
	subMul:     subMulGo,
	add:        addGo,
	addTo:      addToGo,
	gelu:       geluGo,
	geluBack:   geluBackGo,
	sumSqDev:   sumSqDevGo,
	lnAffine:   lnAffineGo,
	lnBackDots: lnBackDotsGo,
	lnBackDx:   lnBackDxGo,
	lnBackW:    lnBackWGo,
	adamW:      adamWGo,

	expSubRows:    expSubRowsGo,
	subMulRows:    subMulRowsGo,
	onlineSoftmax: onlineSoftmaxGo,
	scaleRows:     scaleRowsGo,
}

func expGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = expf(x)
	}
}

func expSubGo(dst, src []float32, m float32) float32 {
	dst = dst[:len(src)]
	var s float32
	for i, x := range src {
		e := expf(x - m)
		dst[i] = e
		s += e
	}
	return s
}

func maxGo(x []float32) float32 {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	return mx
}

func sumGo(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGo(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

func subMulGo(dst, p []float32, d float32) {
	p = p[:len(dst)]
	for i := range dst {
		dst[i] = p[i] * (dst[i] - d)
	}
}

func scaleGo(dst []float32, s float32) {
	for i := range dst {
		dst[i] *= s
	}
}

func addGo(dst, a, b []float32) {
	a = a[:len(dst)]
	b = b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func addToGo(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] += a[i]
	}
}

// GELU constants. With u = √(2/π)·(x+0.044715x³) and t = −2u,
// GELU(x) = ½x(1+tanh u) = x·σ(2u) = x/(1+eᵗ), which has no cancellation.
const (
	geluA    = -2 * geluC // t = x·(geluA + geluB·x²)
	geluB    = -2 * geluC * 0.044715
	geluTMax = 80.0      // backward clamps t so eᵗ and eᵗ·s² stay finite
	geluK1   = 2 * geluC // 2·du/dx = geluK1 + geluK2·x²
	geluK2   = 2 * geluC * 3 * 0.044715
	// Backward clamps x to [geluXMin, geluXMax], where GELU' is 0 or 1 in
	// float32; beyond, x² and x³ overflow into Inf·0. Forward needs no
	// clamp: eᵗ = Inf gives x/Inf = −0.
	geluXMin = -20.0
	geluXMax = 20.0
)

func geluGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = x / (1 + expf(x*(geluA+geluB*x*x)))
	}
}

// geluBackGo: with s = σ(2u) = 1/(1+eᵗ), GELU' = s + x·s(1−s)·2u', and
// 1−s = eᵗ·s.
func geluBackGo(dinp, inp, dout []float32) {
	inp = inp[:len(dinp)]
	dout = dout[:len(dinp)]
	for i, x := range inp {
		if x < geluXMin {
			x = geluXMin
		}
		if x > geluXMax {
			x = geluXMax
		}
		x2 := x * x
		t := x * (geluA + geluB*x2)
		if t > geluTMax {
			t = geluTMax
		}
		e := expf(t)
		s := 1 / (1 + e)
		d := s + (e*s*s)*(x*(geluK1+geluK2*x2))
		dinp[i] = d * dout[i]
	}
}

func sumSqDevGo(x []float32, m float32) float32 {
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		d0, d1 := x[i]-m, x[i+1]-m
		s0 += d0 * d0
		s1 += d1 * d1
	}
	for ; i < len(x); i++ {
		d := x[i] - m
		s0 += d * d
	}
	return s0 + s1
}

func lnAffineGo(out, x, w, b []float32, m, s float32) {
	x = x[:len(out)]
	w = w[:len(out)]
	b = b[:len(out)]
	for j := range out {
		out[j] = (x[j]-m)*s*w[j] + b[j]
	}
}

func lnBackDotsGo(g, x, w []float32, m, s float32) (sd, sdx float32) {
	x = x[:len(g)]
	w = w[:len(g)]
	for j := range g {
		dn := g[j] * w[j]
		sd += dn
		sdx += dn * ((x[j] - m) * s)
	}
	return sd, sdx
}

func lnBackDxGo(dx, g, x, w []float32, m, s, sd, sdx float32) {
	g = g[:len(dx)]
	x = x[:len(dx)]
	w = w[:len(dx)]
	for j := range dx {
		xh := (x[j] - m) * s
		dx[j] += s * (g[j]*w[j] - sd - xh*sdx)
	}
}

func lnBackWGo(dw, db, g, x []float32, m, s float32) {
	db = db[:len(dw)]
	g = g[:len(dw)]
	x = x[:len(dw)]
	for j := range dw {
		db[j] += g[j]
		dw[j] += g[j] * ((x[j] - m) * s)
	}
}

func adamWGo(p, g, m, v []float32, c adamC) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i, pi := range p {
		mi := c.b1*m[i] + c.a1*g[i]
		vi := c.b2*v[i] + c.a2*(g[i]*g[i])
		m[i], v[i] = mi, vi
		p[i] = pi - c.lr*(mi*c.ib1/(float32(math.Sqrt(float64(vi*c.ib2)))+c.eps)+c.wd*pi)
	}
}
