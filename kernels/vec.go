package kernels

import "math"

// Exp sets dst[i] = exp(src[i]). dst and src may be the same slice. For
// float32 it uses the fast vector exp (see ExpMaxRelErr); for float64 it is
// math.Exp. Exp panics if len(dst) < len(src).
func Exp[F Float](dst, src []F) {
	dst = dst[:len(src)]
	if d32, ok := any(dst).([]float32); ok {
		exp32(d32, any(src).([]float32))
		return
	}
	for i, x := range src {
		dst[i] = F(math.Exp(float64(x)))
	}
}

// exp32 is the float32 vector exp; replaced by faster code where available.
var exp32 = RefExp32

// RefExp32 is the plain-Go float32 exp: math.Exp per element.
func RefExp32(dst, src []float32) {
	for i, x := range src {
		dst[i] = float32(math.Exp(float64(x)))
	}
}

// SoftmaxRows replaces each of the rows×cols row-major rows of x with its
// softmax, subtracting the row maximum first. A row whose entries are all
// -Inf becomes all zeros. SoftmaxRows panics if len(x) < rows*cols.
func SoftmaxRows[F Float](x []F, rows, cols int) {
	_ = x[:rows*cols]
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		mx := F(math.Inf(-1))
		for _, v := range row {
			if v > mx {
				mx = v
			}
		}
		if math.IsInf(float64(mx), -1) {
			clear(row)
			continue
		}
		for j := range row {
			row[j] -= mx
		}
		Exp(row, row)
		var s F
		for _, v := range row {
			s += v
		}
		inv := 1 / s
		for j := range row {
			row[j] *= inv
		}
	}
}

// LayerNormEps is the LayerNorm epsilon of the model contract.
const LayerNormEps = 1e-5

// LayerNormForward normalises each of the N rows of inp [N,C] and applies
// weight and bias [C]: out = (inp-mean)·rstd·weight + bias. It stores the row
// mean and reciprocal standard deviation in mean and rstd [N] for backward.
func LayerNormForward[F Float](out, mean, rstd, inp, weight, bias []F, N, C int) {
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

// LayerNormBackward accumulates the gradients of LayerNormForward into dinp
// [N,C], dweight and dbias [C], given dout [N,C] and the forward's inp,
// weight, mean and rstd.
func LayerNormBackward[F Float](dinp, dweight, dbias, dout, inp, weight, mean, rstd []F, N, C int) {
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

const geluC = 0.7978845608028654 // √(2/π)

// GeluForward sets out = 0.5·x·(1+tanh(√(2/π)·(x+0.044715x³))), the tanh
// form of GELU used by GPT-2 and PyTorch's approximate="tanh".
func GeluForward[F Float](out, inp []F) {
	for i, x := range inp {
		xf := float64(x)
		out[i] = F(0.5 * xf * (1 + math.Tanh(geluC*(xf+0.044715*xf*xf*xf))))
	}
}

// GeluBackward accumulates dinp += dout·GELU'(inp).
func GeluBackward[F Float](dinp, inp, dout []F) {
	for i, x := range inp {
		xf := float64(x)
		u := geluC * (xf + 0.044715*xf*xf*xf)
		th := math.Tanh(u)
		sech2 := 1 - th*th
		d := 0.5*(1+th) + 0.5*xf*sech2*geluC*(1+3*0.044715*xf*xf)
		dinp[i] += F(d) * dout[i]
	}
}

// Add sets dst = a + b elementwise (the residual add). dst may alias a or b.
func Add[F Float](dst, a, b []F) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i := range a {
		dst[i] = a[i] + b[i]
	}
}

// AddTo accumulates dst += a elementwise (residual fan-in in backward).
func AddTo[F Float](dst, a []F) {
	dst = dst[:len(a)]
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
func AdamW[F Float](params, grads, m, v []F, lr, beta1, beta2, eps, wd float64, step int) {
	bc1 := 1 - math.Pow(beta1, float64(step))
	bc2 := 1 - math.Pow(beta2, float64(step))
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
