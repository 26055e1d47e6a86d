package kernels

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Row helpers. Each is generic; the float32 instantiation dispatches to the
// current path (AVX-512, AVX2+FMA or pure Go, see vec32) and the float64
// instantiation is plain Go. They run on the calling goroutine, so attention
// kernels may call them inside parallel.For.

// Exp sets dst[i] = exp(src[i]). dst and src may be the same slice. For
// float32 it is the fast vector exp: relative error below ExpMaxRelErr for
// src[i] in [-87.33, 88.72] (measured maximum 9.8e-8, exhaustively), 0 below
// −87.33654, where exp would be subnormal (−Inf gives 0), +Inf above 88.72,
// NaN for NaN. For float64 it is math.Exp. Exp panics if len(dst) <
// len(src).
func Exp[F Float](dst, src []F) {
	dst = dst[:len(src)]
	if d32, ok := any(dst).([]float32); ok {
		vecs().exp(d32, any(src).([]float32))
		return
	}
	for i, x := range src {
		dst[i] = F(math.Exp(float64(x)))
	}
}

// ExpSub sets dst[i] = exp(src[i]−m) and returns the sum of the dst[i]: the
// core of a (online) softmax, where m is the running row maximum. dst and src
// may be the same slice. The float32 exp is Exp's; the float32 subtraction
// rounds, adding up to |src[i]−m|·2⁻²⁴ to the relative error. With m = -Inf
// (a fully masked row) the differences are NaN, so callers skip such rows as
// SoftmaxRows does. On every path the float32 sum, to the last bit, does not
// change when entries whose exp is 0 (−Inf: masked keys) are appended to
// src, so a softmax row padded with masked keys sums as the row alone.
// ExpSub panics if len(dst) < len(src).
func ExpSub[F Float](dst, src []F, m F) (sum F) {
	dst = dst[:len(src)]
	if d32, ok := any(dst).([]float32); ok {
		return F(vecs().expSub(d32, any(src).([]float32), float32(m)))
	}
	for i, x := range src {
		e := F(math.Exp(float64(x - m)))
		dst[i] = e
		sum += e
	}
	return sum
}

// Max returns the largest element of x, ignoring NaNs; it is -Inf when x is
// empty or all NaN.
func Max[F Float](x []F) F {
	if x32, ok := any(x).([]float32); ok {
		return F(vecs().max(x32))
	}
	mx := F(math.Inf(-1))
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	return mx
}

// Sum returns the sum of the elements of x. The float32 summation order
// depends on the path (vector lanes), so results differ in the last bits.
func Sum[F Float](x []F) F {
	if x32, ok := any(x).([]float32); ok {
		return F(vecs().sum(x32))
	}
	var s F
	for _, v := range x {
		s += v
	}
	return s
}

// Dot returns Σ a[i]·b[i]. The float32 summation order depends on the path.
// Dot panics if len(b) < len(a).
func Dot[F Float](a, b []F) F {
	b = b[:len(a)]
	if a32, ok := any(a).([]float32); ok {
		return F(dot32(a32, any(b).([]float32)))
	}
	var s F
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// Axpy accumulates dst[i] += a·x[i]. Axpy panics if len(x) < len(dst).
func Axpy[F Float](dst []F, a F, x []F) {
	x = x[:len(dst)]
	if d32, ok := any(dst).([]float32); ok {
		axpy32(d32, float32(a), any(x).([]float32))
		return
	}
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// Scale multiplies dst in place by s.
func Scale[F Float](dst []F, s F) {
	if d32, ok := any(dst).([]float32); ok {
		vecs().scale(d32, float32(s))
		return
	}
	for i := range dst {
		dst[i] *= s
	}
}

// SubMul sets dst[i] = p[i]·(dst[i] − d), attention's dS = P ⊙ (dP − D)
// on one row. SubMul panics if len(p) < len(dst).
func SubMul[F Float](dst, p []F, d F) {
	p = p[:len(dst)]
	if d32, ok := any(dst).([]float32); ok {
		vecs().subMul(d32, any(p).([]float32), float32(d))
		return
	}
	for i := range dst {
		dst[i] = p[i] * (dst[i] - d)
	}
}

// SoftmaxRows replaces each of the rows×cols row-major rows of x with its
// softmax, subtracting the row maximum first (Max, then ExpSub and Scale
// by the reciprocal sum). A row whose entries are all -Inf becomes all
// zeros; -Inf entries of other rows become 0. It runs on the calling
// goroutine. SoftmaxRows panics if len(x) < rows*cols.
func SoftmaxRows[F Float](x []F, rows, cols int) {
	_ = x[:rows*cols]
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		mx := Max(row)
		if math.IsInf(float64(mx), -1) {
			clear(row)
			continue
		}
		s := ExpSub(row, row, mx)
		Scale(row, 1/s)
	}
}

// vecParallelMin is the amount of work (elements) below which the whole-tensor
// kernels stay on the calling goroutine.
const vecParallelMin = 1 << 15

// serialWork reports whether splitWork(threads, n, _, cost, _) would stay on the
// calling goroutine. Kernels called per row test it first and call the row
// kernel directly: the closure handed to splitWork escapes (it may run on
// other goroutines), so building it costs a heap allocation per call.
func serialWork(threads, n, cost int) bool {
	return n*cost < vecParallelMin || threads < 2
}

// splitWork runs fn over [0,n) in chunks that are multiples of grain, on at
// most threads threads when n·cost ≥ vecParallelMin (cost is the work per
// unit of n), else on the calling goroutine.
func splitWork(threads, n, grain, cost int, fn func(lo, hi int)) {
	if serialWork(threads, n, cost) {
		fn(0, n)
		return
	}
	parallel.For(threads, n, grain, func(_, lo, hi int) { fn(lo, hi) })
}

// LayerNormEps is the LayerNorm epsilon of the model contract.
const LayerNormEps = 1e-5

// LayerNormForward normalises each of the N rows of inp [N,C] and applies
// weight and bias [C]: out = (inp-mean)·rstd·weight + bias. It stores the row
// mean and reciprocal standard deviation in mean and rstd [N] for backward.
// The float32 version accumulates in float32 (vector lanes) and splits large
// inputs across at most threads threads by rows; the float64 version is
// plain Go. LayerNormForward panics if a slice is shorter than its shape.
func LayerNormForward[F Float](threads int, out, mean, rstd, inp, weight, bias []F, N, C int) {
	_, _, _, _ = out[:N*C], inp[:N*C], mean[:N], rstd[:N]
	_, _ = weight[:C], bias[:C]
	if o32, ok := any(out).([]float32); ok {
		layerNormForward32(threads, o32, any(mean).([]float32), any(rstd).([]float32), any(inp).([]float32), any(weight).([]float32), any(bias).([]float32), N, C)
		return
	}
	for i := 0; i < N; i++ {
		x := inp[i*C : (i+1)*C]
		var m float64
		for _, v := range x {
			m += float64(v)
		}
		m /= float64(C)
		var v2 float64
		for _, v := range x {
			d := float64(v) - m
			v2 += d * d
		}
		v2 /= float64(C)
		s := 1 / math.Sqrt(v2+LayerNormEps)
		o := out[i*C : (i+1)*C]
		for j, v := range x {
			o[j] = F((float64(v)-m)*s)*weight[j] + bias[j]
		}
		mean[i], rstd[i] = F(m), F(s)
	}
}

func layerNormForward32(threads int, out, mean, rstd, inp, weight, bias []float32, N, C int) {
	v := vecs()
	w, b := weight[:C], bias[:C]
	splitWork(threads, N, 1, C, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := inp[i*C : (i+1)*C]
			m := v.sum(x) / float32(C)
			v2 := v.sumSqDev(x, m) / float32(C)
			s := float32(1 / math.Sqrt(float64(v2)+LayerNormEps))
			v.lnAffine(out[i*C:(i+1)*C], x, w, b, m, s)
			mean[i], rstd[i] = m, s
		}
	})
}

// LayerNormBackward accumulates the gradients of LayerNormForward into dinp
// [N,C], dweight and dbias [C], given dout [N,C] and the forward's inp,
// weight, mean and rstd. The float32 version reads each row once, splits
// large inputs across at most threads threads by blocks of rows, and sums
// dweight and dbias by block, then the blocks in order: its result does
// not depend on the thread count. It panics if a slice is shorter than
// its shape.
func LayerNormBackward[F Float](threads int, dinp, dweight, dbias, dout, inp, weight, mean, rstd []F, N, C int) {
	_, _, _, _, _ = dinp[:N*C], dout[:N*C], inp[:N*C], mean[:N], rstd[:N]
	_, _, _ = dweight[:C], dbias[:C], weight[:C]
	if d32, ok := any(dinp).([]float32); ok {
		layerNormBackward32(threads, d32, any(dweight).([]float32), any(dbias).([]float32), any(dout).([]float32), any(inp).([]float32), any(weight).([]float32), any(mean).([]float32), any(rstd).([]float32), N, C)
		return
	}
	for i := 0; i < N; i++ {
		x := inp[i*C : (i+1)*C]
		g := dout[i*C : (i+1)*C]
		m, s := mean[i], rstd[i]
		// dnorm = g·w; dx = rstd·(dnorm − mean(dnorm) − xhat·mean(dnorm·xhat))
		var sd, sdx F
		for j := range x {
			xh := (x[j] - m) * s
			dn := g[j] * weight[j]
			sd += dn
			sdx += dn * xh
			dbias[j] += g[j]
			dweight[j] += g[j] * xh
		}
		sd /= F(C)
		sdx /= F(C)
		dx := dinp[i*C : (i+1)*C]
		for j := range x {
			xh := (x[j] - m) * s
			dx[j] += s * (g[j]*weight[j] - sd - xh*sdx)
		}
	}
}

func layerNormBackward32(threads int, dinp, dweight, dbias, dout, inp, weight, mean, rstd []float32, N, C int) {
	v := vecs()
	w := weight[:C]
	// Each block of lnBlock rows sums its weight and bias gradients into a
	// partial of its own while each row is in cache from the pass over
	// dinp, instead of a second pass over dout and inp; the partials are
	// then added in order, whatever the split.
	nb := (N + lnBlock - 1) / lnBlock
	buf := packBufs.getN(4 * C * nb)
	part := dwords(buf)
	splitWork(threads, nb, 1, lnBlock*C, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			pw, pb := part[2*b*C:(2*b+1)*C], part[(2*b+1)*C:(2*b+2)*C]
			clear(pw)
			clear(pb)
			for i := b * lnBlock; i < min((b+1)*lnBlock, N); i++ {
				x, g := inp[i*C:(i+1)*C], dout[i*C:(i+1)*C]
				sd, sdx := v.lnBackDots(g, x, w, mean[i], rstd[i])
				v.lnBackDx(dinp[i*C:(i+1)*C], g, x, w, mean[i], rstd[i], sd/float32(C), sdx/float32(C))
				v.lnBackW(pw, pb, g, x, mean[i], rstd[i])
			}
		}
	})
	splitWork(threads, C, 64, nb, func(lo, hi int) {
		for b := range nb {
			AddRow(dweight[lo:hi], part[2*b*C+lo:2*b*C+hi])
			AddRow(dbias[lo:hi], part[(2*b+1)*C+lo:(2*b+1)*C+hi])
		}
	})
	packBufs.put(buf)
}

// lnBlock is the rows of LayerNormBackward (float32) whose weight and bias
// gradients are summed into one partial.
const lnBlock = 64

const geluC = 0.7978845608028654 // √(2/π)

// GeluForward sets out = 0.5·x·(1+tanh(√(2/π)·(x+0.044715x³))), the tanh
// form of GELU used by GPT-2 and PyTorch's approximate="tanh". out and inp
// may be the same slice. The float32 version computes the same function as
// x/(1+exp(−2u)) with the fast exp, which avoids the cancellation in 1+tanh:
// its relative error is at most 1.5e-6 for x ≥ −4 (measured on a 2M-point
// grid); further out, where |GELU(x)| < 1e-4, it grows like 2⁻²⁴·|2u| from
// rounding u (1e-5 near x = −9), and results below about 1e-37 flush to −0.
// It splits large inputs across at most threads threads. GeluForward
// panics if len(out) < len(inp).
func GeluForward[F Float](threads int, out, inp []F) {
	out = out[:len(inp)]
	if o32, ok := any(out).([]float32); ok {
		i32, v := any(inp).([]float32), vecs()
		if serialWork(threads, len(inp), 1) {
			v.gelu(o32, i32)
			return
		}
		splitWork(threads, len(inp), 1024, 1, func(lo, hi int) { v.gelu(o32[lo:hi], i32[lo:hi]) })
		return
	}
	for i, x := range inp {
		xf := float64(x)
		out[i] = F(0.5 * xf * (1 + math.Tanh(geluC*(xf+0.044715*xf*xf*xf))))
	}
}

// GeluBackward sets dinp = dout·GELU'(inp); dinp may be dout (in place).
// The float32 version uses the fast exp and splits large inputs across at
// most threads threads. GeluBackward panics if inp or dout is shorter than
// dinp.
func GeluBackward[F Float](threads int, dinp, inp, dout []F) {
	inp, dout = inp[:len(dinp)], dout[:len(dinp)]
	if d32, ok := any(dinp).([]float32); ok {
		i32, g32, v := any(inp).([]float32), any(dout).([]float32), vecs()
		if serialWork(threads, len(dinp), 1) {
			v.geluBack(d32, i32, g32)
			return
		}
		splitWork(threads, len(dinp), 1024, 1, func(lo, hi int) { v.geluBack(d32[lo:hi], i32[lo:hi], g32[lo:hi]) })
		return
	}
	for i, x := range inp {
		xf := float64(x)
		u := geluC * (xf + 0.044715*xf*xf*xf)
		th := math.Tanh(u)
		sech2 := 1 - th*th
		d := 0.5*(1+th) + 0.5*xf*sech2*geluC*(1+3*0.044715*xf*xf)
		dinp[i] = F(d) * dout[i]
	}
}

// Add sets dst = a + b elementwise (the residual add). dst may alias a or b.
// The float32 version splits large inputs across at most threads threads.
// Add panics if b or dst is shorter than a.
func Add[F Float](threads int, dst, a, b []F) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	if d32, ok := any(dst).([]float32); ok {
		a32, b32, v := any(a).([]float32), any(b).([]float32), vecs()
		if serialWork(threads, len(a), 1) {
			v.add(d32, a32, b32)
			return
		}
		splitWork(threads, len(a), 4096, 1, func(lo, hi int) { v.add(d32[lo:hi], a32[lo:hi], b32[lo:hi]) })
		return
	}
	for i := range a {
		dst[i] = a[i] + b[i]
	}
}

// AddTo accumulates dst += a elementwise (residual fan-in in backward). The
// float32 version splits large inputs across at most threads threads.
// AddTo panics if dst is shorter than a.
func AddTo[F Float](threads int, dst, a []F) {
	dst = dst[:len(a)]
	if d32, ok := any(dst).([]float32); ok {
		a32, v := any(a).([]float32), vecs()
		if serialWork(threads, len(a), 1) {
			v.addTo(d32, a32)
			return
		}
		splitWork(threads, len(a), 4096, 1, func(lo, hi int) { v.addTo(d32[lo:hi], a32[lo:hi]) })
		return
	}
	for i := range a {
		dst[i] += a[i]
	}
}

// AdamW performs one decoupled-weight-decay Adam step (Loshchilov & Hutter)
// on params, given grads, updating the moment buffers m and v in place. step
// is the 1-based step number used for bias correction:
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p -= lr·( m/(1−β1^step) / (√(v/(1−β2^step)) + eps) + wd·p )
//
// The float32 version computes in float32 with bias corrections folded into
// reciprocals, and splits large inputs across at most threads threads.
// AdamW panics if grads, m or v is shorter than params.
func AdamW[F Float](threads int, params, grads, m, v []F, lr, beta1, beta2, eps, wd float64, step int) {
	grads, m, v = grads[:len(params)], m[:len(params)], v[:len(params)]
	bc1 := 1 - math.Pow(beta1, float64(step))
	bc2 := 1 - math.Pow(beta2, float64(step))
	if p32, ok := any(params).([]float32); ok {
		g32, m32, v32, vs := any(grads).([]float32), any(m).([]float32), any(v).([]float32), vecs()
		c := adamC{
			b1: float32(beta1), a1: float32(1 - beta1), b2: float32(beta2), a2: float32(1 - beta2),
			ib1: float32(1 / bc1), ib2: float32(1 / bc2), lr: float32(lr), eps: float32(eps), wd: float32(wd),
		}
		splitWork(threads, len(params), 4096, 4, func(lo, hi int) {
			vs.adamW(p32[lo:hi], g32[lo:hi], m32[lo:hi], v32[lo:hi], c)
		})
		return
	}
	for i := range params {
		g := float64(grads[i])
		mi := beta1*float64(m[i]) + (1-beta1)*g
		vi := beta2*float64(v[i]) + (1-beta2)*g*g
		m[i], v[i] = F(mi), F(vi)
		p := float64(params[i])
		p -= lr * ((mi/bc1)/(math.Sqrt(vi/bc2)+eps) + wd*p)
		params[i] = F(p)
	}
}
