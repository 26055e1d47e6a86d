package fnet

import (
	"fmt"
	"sync"

	"tokenmix/kernels"
	"tokenmix/kernels/fft"
	"tokenmix/mixer"
	"tokenmix/parallel"
)

// GemmMaxT is the longest sequence for which "method":"auto" uses the
// DFT-as-GEMM path; longer sequences use the FFT. Measured at d=256 (CPU
// time, shared 2-core AVX-512 machine, `go test -bench Forward
// ./mixer/fnet/`): the two paths were within noise for T ≤ 128, the FFT
// was ≈1.4× faster at T=256–512 and ≈3× at T=1024 (the GEMM path's
// 4·T²·D term), so the GEMM path is kept only for very short sequences.
const GemmMaxT = 64

// Kind returns the registry entry of the "fnet" mixer.
func Kind() mixer.Kind {
	return mixer.Kind{
		Name:          "fnet",
		Causal:        false,
		Bidirectional: true,
		KeyPadding:    false,
		Paper:         "Lee-Thorp et al. 2021, FNet: Mixing Tokens with Fourier Transforms",
		New32:         func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64:         func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
	}
}

// Method selects FNet's kernel.
type Method int

const (
	Auto Method = iota // GEMM for T ≤ GemmMaxT, FFT above
	FFT
	Gemm
)

// FNet is the parameter-free Fourier mixer; see the package doc.
type FNet[F kernels.Float] struct {
	D      int
	Method Method
}

// New returns an FNet mixer for config c. It accepts the option "method"
// ("auto", "fft" or "gemm"). New returns an error if c.Causal is set, if
// c.D < 1, or naming any unknown or invalid option.
func New[F kernels.Float](c mixer.Config) (*FNet[F], error) {
	m := c.Opts.String("method", "auto")
	f := &FNet[F]{D: c.D}
	switch m {
	case "auto":
		f.Method = Auto
	case "fft":
		f.Method = FFT
	case "gemm":
		f.Method = Gemm
	default:
		c.Opts.Fail("method", "want \"auto\", \"fft\" or \"gemm\", got %q", m)
	}
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	if c.Causal {
		return nil, fmt.Errorf("mixer.kind: fnet has no causal form; set \"causal\": false")
	}
	if c.D < 1 {
		return nil, fmt.Errorf("mixer: fnet needs d ≥ 1, got %d", c.D)
	}
	return f, nil
}

// Params returns nil: FNet has no parameters.
func (f *FNet[F]) Params() []mixer.ParamSpec { return nil }

// Bind does nothing: FNet has no parameters.
func (f *FNet[F]) Bind(w, g [][]F) {}

// ActSize is 0: the operator is linear and self-adjoint, so backward needs
// nothing from forward.
func (f *FNet[F]) ActSize(b, t int) int { return 0 }

func (f *FNet[F]) useGemm(t int) bool {
	return f.Method == Gemm || f.Method == Auto && t <= GemmMaxT
}

// ScratchSize is, for the GEMM path, X·C_D and X·S_D [T,2D]; for the FFT
// path, the half spectrum [B, D/2+1, T] (real and imaginary) plus per-thread
// FFT work space (parallel.Threads() at the time of the call).
func (f *FNet[F]) ScratchSize(b, t int) int {
	if f.useGemm(t) {
		return 2 * t * f.D
	}
	nk := f.D/2 + 1
	return 2*b*nk*t + parallel.Threads()*f.workerSize(t)
}

func (f *FNet[F]) workerSize(t int) int {
	nk := f.D/2 + 1
	pd, pt := fft.PlanFor[F](f.D), fft.PlanFor[F](t)
	ws := max(pd.Real2ScratchLen()+2*rowBlock*nk, 2*pt.ScratchLen())
	if t%2 == 0 && t >= 4 {
		ws = max(ws, t+2*fft.PlanFor[F](t/2).ScratchLen())
	}
	return ws
}

// Forward sets out = Re(FFT_time(FFT_channels(x))) per sequence. It ignores
// p.Pad: padding positions are mixed like any token.
func (f *FNet[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	f.apply(out, scratch, x, p.B, p.T, false)
}

// Backward accumulates dx += Re(FFT_time(FFT_channels(dout))): the operator
// is self-adjoint (see the package doc).
func (f *FNet[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	f.apply(dx, scratch, dout, p.B, p.T, true)
}

// apply sets dst = A·src, or dst += A·src when acc, for B sequences
// [T,D].
func (f *FNet[F]) apply(dst, scratch, src []F, B, T int, acc bool) {
	n := B * T * f.D
	dst, src = dst[:n], src[:n]
	if f.useGemm(T) {
		f.applyGemm(dst, scratch, src, B, T, acc)
		return
	}
	f.applyFFT(dst, scratch, src, B, T, acc)
}

// trig holds C_n and S_n, [n,n] each.
type trig[F kernels.Float] struct{ c, s []F }

var trigCache sync.Map // trigKey → *trig[F]

type trigKey struct {
	n   int
	f64 bool
}

// trigFor returns the cached cos/sin matrices of size n.
func trigFor[F kernels.Float](n int) *trig[F] {
	var zero F
	_, f64 := any(zero).(float64)
	k := trigKey{n, f64}
	if v, ok := trigCache.Load(k); ok {
		return v.(*trig[F])
	}
	tr := &trig[F]{c: make([]F, n*n), s: make([]F, n*n)}
	for j := 0; j < n; j++ {
		for k := 0; k < n; k++ {
			c, s := fft.Twiddle(j*k, n)
			// Twiddle gives exp(−2πi·jk/n) = cos − i·sin.
			tr.c[j*n+k], tr.s[j*n+k] = F(c), F(-s)
		}
	}
	v, _ := trigCache.LoadOrStore(k, tr)
	return v.(*trig[F])
}

// applyGemm evaluates C_T·X·C_D − S_T·X·S_D with four GEMMs per sequence.
func (f *FNet[F]) applyGemm(dst, scratch, src []F, B, T int, acc bool) {
	D := f.D
	td, tt := trigFor[F](D), trigFor[F](T)
	y := scratch[:2*T*D] // [T,2D]: X·C_D | X·S_D
	beta := F(0)
	if acc {
		beta = 1
	}
	for b := 0; b < B; b++ {
		x := src[b*T*D : (b+1)*T*D]
		o := dst[b*T*D : (b+1)*T*D]
		kernels.Gemm(false, false, T, D, D, 1, x, D, td.c, D, 0, y, 2*D)
		kernels.Gemm(false, false, T, D, D, 1, x, D, td.s, D, 0, y[D:], 2*D)
		kernels.Gemm(false, false, T, D, T, 1, tt.c, T, y, 2*D, beta, o, D)
		kernels.Gemm(false, false, T, D, T, -1, tt.s, T, y[D:], 2*D, 1, o, D)
	}
}

// rowBlock is the number of time rows (and columns) moved per cache-friendly
// transpose block.
const rowBlock = 16

// applyFFT: channel FFTs on pairs of rows into the transposed half
// spectrum z [B][nk][T], then one time FFT per kept frequency, writing the
// real parts (and their mirror images) into dst. Both transposes move
// rowBlock×rowBlock blocks so that every cache line is written whole.
func (f *FNet[F]) applyFFT(dst, scratch, src []F, B, T int, acc bool) {
	D := f.D
	nk := D/2 + 1
	pd, pt := fft.PlanFor[F](D), fft.PlanFor[F](T)
	zr := scratch[:B*nk*T]
	zi := scratch[B*nk*T : 2*B*nk*T]
	ws := f.workerSize(T)
	work := scratch[2*B*nk*T:]
	if len(work) < parallel.Threads()*ws {
		panic("fnet: scratch smaller than ScratchSize (threads raised since?)")
	}
	nrb := (T + rowBlock - 1) / rowBlock
	zeros := make([]F, D)
	parallel.For(B*nrb, 1, func(w, lo, hi int) {
		ww := work[w*ws : (w+1)*ws]
		// br, bi [rowBlock][nk]: the block's half spectra.
		br, bi := ww[:rowBlock*nk], ww[rowBlock*nk:2*rowBlock*nk]
		fs := ww[2*rowBlock*nk:]
		for i := lo; i < hi; i++ {
			b, t0 := i/nrb, (i%nrb)*rowBlock
			t1 := min(t0+rowBlock, T)
			for t := t0; t < t1; t += 2 {
				x1 := src[(b*T+t)*D : (b*T+t+1)*D]
				x2 := zeros
				if t+1 < t1 {
					x2 = src[(b*T+t+1)*D : (b*T+t+2)*D]
				}
				j := t - t0
				pd.Real2(br[j*nk:(j+1)*nk], bi[j*nk:(j+1)*nk], br[(j+1)*nk:(j+2)*nk], bi[(j+1)*nk:(j+2)*nk], x1, x2, fs)
			}
			base := b * nk * T
			for k := 0; k < nk; k++ {
				zrk, zik := zr[base+k*T+t0:base+k*T+t1], zi[base+k*T+t0:base+k*T+t1]
				for j := range zrk {
					zrk[j], zik[j] = br[j*nk+k], bi[j*nk+k]
				}
			}
		}
	})
	// Even T: only Re(FFT_time) is needed, which a half-length transform
	// gives (realPart).
	var hp *fft.Plan[F]
	var ht *halfTwiddles[F]
	if T%2 == 0 && T >= 4 {
		hp, ht = fft.PlanFor[F](T/2), halfTwiddlesFor[F](T)
	}
	ncb := (nk + rowBlock - 1) / rowBlock
	parallel.For(B*ncb, 1, func(w, lo, hi int) {
		fs := work[w*ws : (w+1)*ws]
		for i := lo; i < hi; i++ {
			b, k0 := i/ncb, (i%ncb)*rowBlock
			k1 := min(k0+rowBlock, nk)
			z := zr[b*nk*T:]
			for k := k0; k < k1; k++ {
				re, im := z[k*T:(k+1)*T], zi[(b*nk+k)*T:(b*nk+k+1)*T]
				if hp != nil {
					realPart(re, im, hp, ht, fs)
				} else {
					pt.Transform(re, im, fs)
				}
			}
			o := dst[b*T*D : (b+1)*T*D]
			// Kept columns k0…k1−1, and their mirrors D−k for k ≥ 1 with
			// D−k ≥ nk: out[t, D−k] = Re Z[(T−t) mod T, k].
			for t := 0; t < T; t++ {
				ot := o[t*D : (t+1)*D]
				tm := (T - t) % T
				if acc {
					for k := k0; k < k1; k++ {
						ot[k] += z[k*T+t]
					}
					for k := max(k0, 1); k < k1 && D-k >= nk; k++ {
						ot[D-k] += z[k*T+tm]
					}
					continue
				}
				for k := k0; k < k1; k++ {
					ot[k] = z[k*T+t]
				}
				for k := max(k0, 1); k < k1 && D-k >= nk; k++ {
					ot[D-k] = z[k*T+tm]
				}
			}
		}
	})
}

// halfTwiddles holds exp(+2πi·j/T) for j < T/2.
type halfTwiddles[F kernels.Float] struct{ c, s []F }

var halfCache sync.Map // trigKey → *halfTwiddles[F]

func halfTwiddlesFor[F kernels.Float](T int) *halfTwiddles[F] {
	var zero F
	_, f64 := any(zero).(float64)
	k := trigKey{T, f64}
	if v, ok := halfCache.Load(k); ok {
		return v.(*halfTwiddles[F])
	}
	h := &halfTwiddles[F]{c: make([]F, T/2), s: make([]F, T/2)}
	for j := range h.c {
		c, s := fft.Twiddle(-j, T)
		h.c[j], h.s[j] = F(c), F(s)
	}
	v, _ := halfCache.LoadOrStore(k, h)
	return v.(*halfTwiddles[F])
}

// realPart replaces re with y = Re(FFT(re + i·im)) for even T = len(re),
// using one complex FFT of length M = T/2 (hp) instead of one of length T.
// im is clobbered; fs holds T + 2·hp.ScratchLen() elements.
//
// y = Re(F z) = F u with u[t] = (z[t] + conj z[−t])/2 Hermitian, so
// y[n] = Σ_k X[k]·e^{+2πi·kn/T} with X = conj u. Splitting n into even and
// odd, y[2m] + i·y[2m+1] = Σ_{k<M} (A[k] + i·B[k])·e^{+2πi·km/M} with
// A[k] = X[k] + X[k+M] and B[k] = (X[k] − X[k+M])·e^{+2πi·k/T}; the sum is
// conj(FFT_M(conj(A + i·B))).
func realPart[F kernels.Float](re, im []F, hp *fft.Plan[F], ht *halfTwiddles[F], fs []F) {
	T := len(re)
	M := T / 2
	br, bi := fs[:M], fs[M:T]
	for k := 0; k < M; k++ {
		n1, n2 := (T-k)%T, M-k // −k and −(k+M) mod T
		xr, xi := (re[k]+re[n1])/2, (im[n1]-im[k])/2
		yr, yi := (re[k+M]+re[n2])/2, (im[n2]-im[k+M])/2
		ar, ai := xr+yr, xi+yi
		dr, di := xr-yr, xi-yi
		c, s := ht.c[k], ht.s[k]
		bR, bI := dr*c-di*s, dr*s+di*c
		// Z = A + i·B; store conj(Z).
		br[k], bi[k] = ar-bI, -(ai + bR)
	}
	hp.Transform(br, bi, fs[T:])
	for m := 0; m < M; m++ {
		re[2*m], re[2*m+1] = br[m], -bi[m]
	}
	_ = im
}
