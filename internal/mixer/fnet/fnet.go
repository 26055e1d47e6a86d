package fnet

import (
	"fmt"
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/kernels/fft"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// GemmMaxT is the longest sequence for which "method":"auto" uses the
// DFT-as-GEMM path; longer sequences use the FFT. It is 0, so "auto" always
// uses the FFT path, which is faster even for the shortest sequences (its
// channel DFT is a GEMM too, and its time transforms are vectorised). The
// GEMM path stays available as "method":"gemm".
const GemmMaxT = 0

// Kinds returns the package's registry entries: FNet ("fnet").
func Kinds() []mixer.Kind {
	return []mixer.Kind{{
		Name:          "fnet",
		Causal:        false,
		Bidirectional: true,
		KeyPadding:    false,
		Paper:         "Lee-Thorp et al. 2021, FNet: Mixing Tokens with Fourier Transforms",
		New32:         func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64:         func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests:         tests(),
	}}
}

// Method selects FNet's kernel.
type Method int

const (
	Auto Method = iota // GEMM for T ≤ GemmMaxT (0: never), FFT above
	FFT
	Gemm
)

// FNet is the parameter-free Fourier mixer; see the package doc.
type FNet[F kernels.Float] struct {
	D      int
	Method Method
	// ChannelGemmMaxD is the widest D whose channel DFT the FFT path does
	// as a GEMM (New sets the package default ChannelGemmMaxD).
	ChannelGemmMaxD int
	// TimeFirstMaxD is the widest D for which the FFT path transforms time
	// first (New sets the package default TimeFirstMaxD; 0 forces the
	// channel-first order).
	TimeFirstMaxD int
}

// New returns an FNet mixer for config c. It accepts the option "method"
// ("auto", "fft" or "gemm"). New returns an error if c.Causal is set, if
// c.D < 1, or naming any unknown or invalid option.
func New[F kernels.Float](c mixer.Config) (*FNet[F], error) {
	m := c.Opts.String("method", "auto")
	f := &FNet[F]{D: c.D, ChannelGemmMaxD: ChannelGemmMaxD, TimeFirstMaxD: TimeFirstMaxD}
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

// ScratchSize is, for the GEMM path, X·C_D and X·S_D [T,2D]; for the
// time-first FFT path, the time transforms y [B·T, zStride(D)], for even D
// the Nyquist column [B·T] and a zero column [T], and per-thread work space
// (one folded column block and its transform's scratch, or one chunk of the
// output pass); for the channel-first FFT path, the half spectrum Z [B·T, zStride(D)] (real and imaginary), for even
// D its Nyquist column [B·T] and a zero column [T], and per-thread work space
// for one block of columns (threads of them, the pass's budget); when the
// channel DFT is a GEMM, the work space holds one chunk of foldChunk
// folded rows.
func (f *FNet[F]) ScratchSize(b, t, threads int) int {
	if f.useGemm(t) {
		return 2 * t * f.D
	}
	nt := mixer.Budget(threads)
	if f.timeFirst() {
		return b*t*zStride(f.D) + nyqSize(f.D, b, t) + nt*f.tfWorkerSize(t)
	}
	return 2*b*t*zStride(f.D) + nyqSize(f.D, b, t) + nt*f.workerSize(t)
}

// nyqSize is the Nyquist column [B·T] and a zero column [T] for even D, or
// 0.
func nyqSize(D, b, t int) int {
	if D%2 != 0 {
		return 0
	}
	return b*t + t
}

// workerSize is one thread's work space: the channel FFT's (when D is above
// ChannelGemmMaxD) and one column block's time transform.
func (f *FNet[F]) workerSize(t int) int {
	nk := f.D/2 + 1
	w := min(colBlock, zCols(f.D))
	var ws int
	if f.D > f.ChannelGemmMaxD {
		// Real2 scratch, two half spectra and a zero row.
		ws = fft.PlanFor[F](f.D).Real2ScratchLen() + 4*nk + f.D
	} else {
		ws = foldChunk * (nk + (f.D-1)/2)
	}
	if t%2 == 0 {
		return max(ws, fft.RealPlanFor[F](t).ScratchLen(w))
	}
	return max(ws, 2*t*w+2*fft.PlanFor[F](t).BatchScratchLen(w))
}

// Forward sets out = Re(FFT_time(FFT_channels(x))) per sequence. It ignores
// p.Pad: padding positions are mixed like any token.
func (f *FNet[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	f.apply(mixer.Budget(p.Threads), out, scratch, x, p.B, p.T, false)
}

// Backward accumulates dx += Re(FFT_time(FFT_channels(dout))): the operator
// is self-adjoint (see the package doc).
func (f *FNet[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	f.apply(mixer.Budget(p.Threads), dx, scratch, dout, p.B, p.T, true)
}

// apply sets dst = A·src, or dst += A·src when acc, for B sequences
// [T,D], on at most th threads.
func (f *FNet[F]) apply(th int, dst, scratch, src []F, B, T int, acc bool) {
	n := B * T * f.D
	dst, src = dst[:n], src[:n]
	if f.useGemm(T) {
		f.applyGemm(th, dst, scratch, src, B, T, acc)
		return
	}
	if f.timeFirst() {
		f.applyTimeFirst(th, dst, scratch, src, B, T, acc)
		return
	}
	f.applyFFT(th, dst, scratch, src, B, T, acc)
}

// timeFirst reports whether the FFT path transforms time first.
func (f *FNet[F]) timeFirst() bool { return f.D <= f.TimeFirstMaxD }

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
func (f *FNet[F]) applyGemm(th int, dst, scratch, src []F, B, T int, acc bool) {
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
		kernels.Gemm(th, kernels.PrecFP32, false, false, T, D, D, 1, x, D, td.c, D, 0, y, 2*D)
		kernels.Gemm(th, kernels.PrecFP32, false, false, T, D, D, 1, x, D, td.s, D, 0, y[D:], 2*D)
		kernels.Gemm(th, kernels.PrecFP32, false, false, T, D, T, 1, tt.c, T, y, 2*D, beta, o, D)
		kernels.Gemm(th, kernels.PrecFP32, false, false, T, D, T, -1, tt.s, T, y[D:], 2*D, 1, o, D)
	}
}

// colBlock is the number of kept channel frequencies whose time transforms
// run together (fft.TransformBatch): 16 float32 lanes, so every Stockham pass
// is vectorised.
const colBlock = 16

// ChannelGemmMaxD is the widest model dimension whose channel DFT the
// channel-first order does as GEMMs of the folded rows against cached
// cos/sin columns (2·T·(D/2+1)·D flops, vectorised) rather than as real
// FFTs of pairs of rows (O(T·D·log D) flops, scalar butterflies): the GEMM
// wins up to D=512 and loses at D=1024.
const ChannelGemmMaxD = 512

// TimeFirstMaxD is the widest model dimension for which the FFT path
// transforms time first (applyTimeFirst) rather than channels first. Its
// channel GEMMs do half the flops of the channel-first ones, so it wins
// wherever channel-first uses a GEMM (D ≤ ChannelGemmMaxD) and at D=768
// against the channel FFTs, but its T·D²/2 flops lose to the O(T·D·log D)
// channel FFTs from D=1024 on. BenchmarkOrderAB compares the two orders.
const TimeFirstMaxD = 768

// applyFFT: the channel DFT of every row into the half spectrum
// Z [B·T, nz] = X·(C_D − i·S_D)[:, :nz], nz = zCols(D), and for even D the
// Nyquist column nyq [B·T] (real), then the time transforms of the kept
// columns in blocks of colBlock, each writing its real parts back into its
// own columns of Re Z, and of the Nyquist column, then one pass writing (or
// adding) whole rows of dst from those real parts and their mirror images.
func (f *FNet[F]) applyFFT(th int, dst, scratch, src []F, B, T int, acc bool) {
	D := f.D
	nz, ld := zCols(D), zStride(D)
	zr := scratch[:B*T*ld]
	zi := scratch[B*T*ld : 2*B*T*ld]
	var nyq, zero []F
	if D%2 == 0 {
		nyq = scratch[2*B*T*ld : 2*B*T*ld+B*T]
		zero = scratch[2*B*T*ld+B*T : 2*B*T*ld+B*T+T]
		clear(zero)
	}
	ws := f.workerSize(T)
	work := scratch[2*B*T*ld+nyqSize(D, B, T):]
	if len(work) < th*ws {
		panic("fnet: scratch smaller than ScratchSize (Pass.Threads above its?)")
	}
	if D <= f.ChannelGemmMaxD {
		f.channelGemm(th, zr, zi, nyq, work, src, B*T, ws)
	} else {
		f.channelFFT(th, zr, zi, nyq, work, src, B*T, ws)
	}
	timePass(th, zr, zi, nyq, zero, work, B, T, ld, nz, ws)
	// Every row of dst from its own real parts and, mirrored, those of
	// row (T−t) mod T: streaming whole rows, rows t and T−t together so
	// that each row of Re Z is read from memory once.
	np := T/2 + 1
	parallel.For(th, B*np, 32, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			b, t := i/np, i%np
			r, rm := b*T+t, b*T+(T-t)%T
			zt, zm := zr[r*ld:r*ld+nz], zr[rm*ld:rm*ld+nz]
			var yt, ym F
			if nyq != nil {
				yt, ym = nyq[r], nyq[rm]
			}
			unfoldRow(dst[r*D:(r+1)*D], zt, zm, yt, acc)
			if rm != r {
				unfoldRow(dst[rm*D:(rm+1)*D], zm, zt, ym, acc)
			}
		}
	})
}

// timePlans returns the time transform for length T: a RealPlan for even T
// (only Re(FFT_time) is needed, which a half-length transform gives), else a
// complex Plan.
func timePlans[F kernels.Float](T int) (*fft.RealPlan[F], *fft.Plan[F]) {
	if T%2 == 0 {
		return fft.RealPlanFor[F](T), nil
	}
	return nil, fft.PlanFor[F](T)
}

// timeItems returns the number of colBlock-wide column blocks of nz columns
// and the number of work items of a time pass over B sequences: every
// block of every sequence, then (withNyq) one Nyquist column per sequence.
func timeItems(B, nz int, withNyq bool) (ncb, items int) {
	ncb = (nz + colBlock - 1) / colBlock
	items = B * ncb
	if withNyq {
		items += B
	}
	return ncb, items
}

// timePass replaces the kept columns 0…nz−1 of Re Z (B sequences [T, ld])
// with Re(FFT_time) of the complex columns (zr, zi), in blocks of colBlock
// columns split over the threads, and the Nyquist column nyq [B·T] (nil for
// odd D; real, with the zero column zero [T] as imaginary part) with its own
// Re(FFT_time), on at most th threads. work holds th work spaces of ws
// elements.
func timePass[F kernels.Float](th int, zr, zi, nyq, zero, work []F, B, T, ld, nz, ws int) {
	rp, pt := timePlans[F](T)
	ncb, items := timeItems(B, nz, nyq != nil)
	parallel.For(th, items, 1, func(w, lo, hi int) {
		fs := work[w*ws : (w+1)*ws]
		for i := lo; i < hi; i++ {
			if i >= B*ncb {
				b := i - B*ncb
				nyqTime(nyq[b*T:(b+1)*T], zero, rp, pt, fs)
				continue
			}
			b, k0 := i/ncb, (i%ncb)*colBlock
			k1 := min(k0+colBlock, nz)
			zrb, zib := zr[b*T*ld:(b+1)*T*ld], zi[b*T*ld:(b+1)*T*ld]
			w := k1 - k0
			if rp != nil {
				// Even T: only Re(FFT_time) is needed, which a
				// half-length transform gives; it overwrites the
				// block's columns of Re Z (even and odd rows).
				rp.Batch(zrb[k0:], zrb[ld+k0:], 2*ld, zrb[k0:], zib[k0:], ld, w, fs)
			} else {
				fullBlock(zrb, zib, ld, k0, k1, pt, fs)
			}
		}
	})
}

// nyqTime replaces the real Nyquist column nb [T] with Re(FFT_time(nb)),
// zero [T] being its imaginary part: with the RealPlan rp for even T, else
// with the complex plan pt. fs is one thread's work space.
func nyqTime[F kernels.Float](nb, zero []F, rp *fft.RealPlan[F], pt *fft.Plan[F], fs []F) {
	if rp != nil {
		rp.Batch(nb, nb[1:], 2, nb, zero, 1, 1, fs)
	} else {
		fullBlock(nb, zero, 1, 0, 1, pt, fs)
	}
}

// zCols is the number of channel frequencies 0…zCols−1 held in Z. For even
// D the Nyquist frequency D/2, which is real (Σ_c (−1)^c·x[c]), is kept in a
// column of its own instead: at D=256 a row of Z is then exactly 128 floats
// (eight column blocks), not 129 spilling into a ninth cache line with a
// one-column block of its own.
func zCols(D int) int { return (D + 1) / 2 }

// zStride is the row stride of the half spectrum Z: zCols(D) rounded up to
// a whole column block, so that every block's rows start on a cache line.
func zStride(D int) int { return (zCols(D) + colBlock - 1) / colBlock * colBlock }

// foldChunk is the number of rows folded and multiplied at a time by one
// thread in channelGemm (the folded chunk stays in its cache).
const foldChunk = 256

// channelGemm fills Z for the n rows of src with GEMMs against the cached
// cos/sin matrix, foldChunk rows at a time per thread. Folding halves the
// GEMMs: cos(2πck/D) and sin(2πck/D) are even and odd under c → D−c, so
// with xe[c] = x[c] + x[D−c] (c < nk, the partner term only when D−c > c)
// and xo[c−1] = x[c] − x[D−c] (1 ≤ c ≤ ns = (D−1)/2),
// Z = Xe·C[0…nk−1, :nz] − i·Xo·S[1…ns, :nz]; the Nyquist column (even D)
// is the alternating sum foldRow returns.
func (f *FNet[F]) channelGemm(th int, zr, zi, nyq, work, src []F, n, ws int) {
	D := f.D
	nk, ns, nz, ld := D/2+1, (D-1)/2, zCols(D), zStride(D)
	td := trigFor[F](D)
	nc := (n + foldChunk - 1) / foldChunk
	parallel.For(th, nc, 1, func(w, lo, hi int) {
		fs := work[w*ws : (w+1)*ws]
		for i := lo; i < hi; i++ {
			r0, r1 := i*foldChunk, min((i+1)*foldChunk, n)
			m := r1 - r0
			xe, xo := fs[:m*nk], fs[m*nk:m*(nk+ns)]
			for t := 0; t < m; t++ {
				a := foldRow(xe[t*nk:(t+1)*nk], xo[t*ns:(t+1)*ns], src[(r0+t)*D:(r0+t+1)*D])
				if nyq != nil {
					nyq[r0+t] = a
				}
			}
			kernels.Gemm(1, kernels.PrecFP32, false, false, m, nz, nk, 1, xe, nk, td.c, D, 0, zr[r0*ld:], ld)
			kernels.Gemm(1, kernels.PrecFP32, false, false, m, nz, ns, -1, xo, ns, td.s[D:], D, 0, zi[r0*ld:], ld)
		}
	})
}

// channelFFT fills the half spectra rows of Z (and the Nyquist column)
// with one complex FFT per pair of rows (fft.Plan.Real2), for the n = B·T
// rows of src.
func (f *FNet[F]) channelFFT(th int, zr, zi, nyq, work, src []F, n, ws int) {
	D := f.D
	nk, nz, ld := D/2+1, zCols(D), zStride(D)
	pd := fft.PlanFor[F](D)
	np := (n + 1) / 2
	parallel.For(th, np, 16, func(w, lo, hi int) {
		fs := work[w*ws : (w+1)*ws]
		// Two half spectra [nk] each, then a zero row and Real2's scratch.
		r1, i1, r2, i2 := fs[:nk], fs[nk:2*nk], fs[2*nk:3*nk], fs[3*nk:4*nk]
		for i := lo; i < hi; i++ {
			t := 2 * i
			x2 := fs[4*nk : 4*nk+D]
			if t+1 < n {
				x2 = src[(t+1)*D : (t+2)*D]
			} else { // odd n: pair the last row with zeros, discard its spectrum
				clear(x2)
			}
			pd.Real2(r1, i1, r2, i2, src[t*D:(t+1)*D], x2, fs[4*nk+D:])
			for j, h := range [][2][]F{{r1, i1}, {r2, i2}} {
				if t+j >= n {
					break
				}
				copy(zr[(t+j)*ld:(t+j)*ld+nz], h[0])
				copy(zi[(t+j)*ld:(t+j)*ld+nz], h[1])
				if nyq != nil {
					nyq[t+j] = h[0][D/2] // real: Σ_c (−1)^c·x[c]
				}
			}
		}
	})
}

// fullBlock transforms the kept columns k0…k1−1 of one sequence's Z
// (rows ld apart) over time with a full-length batched complex FFT and writes the
// real parts back into zr. fs holds 2·T·w + 2·pt.BatchScratchLen(w)
// elements, w = k1−k0.
func fullBlock[F kernels.Float](zr, zi []F, ld, k0, k1 int, pt *fft.Plan[F], fs []F) {
	T, w := pt.Len(), k1-k0
	br, bi := fs[:T*w], fs[T*w:2*T*w]
	for t := 0; t < T; t++ {
		copy(br[t*w:(t+1)*w], zr[t*ld+k0:t*ld+k1])
		copy(bi[t*w:(t+1)*w], zi[t*ld+k0:t*ld+k1])
	}
	pt.TransformBatch(br, bi, w, fs[2*T*w:])
	for t := 0; t < T; t++ {
		copy(zr[t*ld+k0:t*ld+k1], br[t*w:(t+1)*w])
	}
}
