package fnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/kernels/fft"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/mixer"
)

func cfg(d int, method string) mixer.Config {
	opts := map[string]any{}
	if method != "" {
		opts["method"] = method
	}
	return mixer.Config{D: d, Heads: 1, MaxLen: 64, Opts: mixer.OptionsOf("fnet", opts)}
}

// orders are the FFT path's two orders: time first (the default up to
// TimeFirstMaxD) and channels first.
var orders = []string{"time-first", "channel-first"}

// setOrder forces the FFT path's order o on f.
func setOrder[F kernels.Float](f *FNet[F], o string) {
	f.TimeFirstMaxD = 0
	if o == "time-first" {
		f.TimeFirstMaxD = math.MaxInt
	}
}

func TestFloat32Agrees(t *testing.T) {
	for _, m := range []string{"fft", "gemm"} {
		mixertest.Float32Agrees(t, Kinds()[0], mixertest.Case{Name: m, Cfg: cfg(24, m), B: 2, T: 33}, 1e-5)
		mixertest.Float32Agrees(t, Kinds()[0], mixertest.Case{Name: m + "-pow2", Cfg: cfg(64, m), B: 1, T: 128}, 1e-5)
	}
}

// TestPathsAgree runs the float32 FFT path on every kernels path (the
// AVX-512 fold, unfold and FFT kernels against their plain-Go twins), forward
// and accumulating backward, against float64, at sizes where the vector
// kernels see full, masked and tail blocks, in both orders.
func TestPathsAgree(t *testing.T) {
	for _, tc := range []struct {
		order   string
		B, T, D int
	}{{"time-first", 1, 64, 80}, {"time-first", 2, 32, 256}, {"time-first", 1, 20, 49}, {"time-first", 2, 15, 33},
		{"channel-first", 1, 64, 80}, {"channel-first", 2, 32, 256}, {"channel-first", 1, 20, 49}} {
		B, T, D := tc.B, tc.T, tc.D
		rng := rand.New(rand.NewPCG(uint64(T), uint64(D)))
		x, dx0 := make([]float64, B*T*D), make([]float64, B*T*D)
		for i := range x {
			x[i], dx0[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		f64, _ := New[float64](cfg(D, "fft"))
		setOrder(f64, tc.order)
		p := mixer.Pass{B: B, T: T}
		want, wantDx := make([]float64, len(x)), append([]float64(nil), dx0...)
		scr := make([]float64, f64.ScratchSize(B, T, 0))
		f64.Forward(want, nil, scr, x, p)
		f64.Backward(wantDx, scr, x, nil, x, p)
		var scale float64
		for _, v := range want {
			scale = math.Max(scale, math.Abs(v))
		}
		f32, _ := New[float32](cfg(D, "fft"))
		setOrder(f32, tc.order)
		for _, path := range kernels.Paths() {
			out, dx32 := run32(f32, path, x, dx0, p)
			var e, ed float64
			for i := range x {
				e = math.Max(e, math.Abs(float64(out[i])-want[i]))
				ed = math.Max(ed, math.Abs(float64(dx32[i])-wantDx[i]))
			}
			if e > 1e-5*scale || ed > 1e-5*scale {
				t.Errorf("%s B=%d T=%d D=%d path %v: forward err %.3g, backward err %.3g (scale %.3g)", tc.order, B, T, D, path, e, ed, scale)
			}
		}
	}
}

// run32 runs f's Forward on x and its accumulating Backward, with dout = x,
// into a gradient starting at dx0, in float32 on kernels path path; it
// returns the output and the gradient.
func run32(f *FNet[float32], path kernels.Path, x, dx0 []float64, p mixer.Pass) (out, dx []float32) {
	old := kernels.SetPath(path)
	defer kernels.SetPath(old)
	x32, dx := make([]float32, len(x)), make([]float32, len(x))
	for i := range x {
		x32[i], dx[i] = float32(x[i]), float32(dx0[i])
	}
	out = make([]float32, len(x))
	s32 := make([]float32, f.ScratchSize(p.B, p.T, 0))
	f.Forward(out, nil, s32, x32, p)
	f.Backward(dx, s32, x32, nil, x32, p)
	return out, dx
}

// naive is the direct O(T²·D²) formula out = Σ x·cos(2π(tt'/T + cc'/D)).
func naive(x []float64, B, T, D int) []float64 {
	out := make([]float64, len(x))
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			for c := 0; c < D; c++ {
				var s float64
				for t2 := 0; t2 < T; t2++ {
					for c2 := 0; c2 < D; c2++ {
						// Reduce the phase exactly: (t·t2·D + c·c2·T) mod T·D.
						ph := (t*t2*D + c*c2*T) % (T * D)
						s += x[(b*T+t2)*D+c2] * math.Cos(2*math.Pi*float64(ph)/float64(T*D))
					}
				}
				out[(b*T+t)*D+c] = s
			}
		}
	}
	return out
}

func TestMatchesNaive(t *testing.T) {
	for _, sz := range [][3]int{{1, 1, 1}, {1, 2, 3}, {2, 5, 4}, {1, 12, 8}, {1, 17, 7}, {2, 30, 16}, {1, 64, 12}, {1, 97, 5}, {1, 4, 3}, {2, 250, 3}, {1, 1000, 2}, {1, 12, 40}, {2, 9, 66}, {1, 34, 35}, {1, 12, 32}, {2, 7, 64}, {1, 2, 34}, {1, 38, 47}, {3, 22, 33}, {1, 26, 37}, {2, 13, 50}, {1, 1, 40}, {2, 2, 64}} {
		B, T, D := sz[0], sz[1], sz[2]
		rng := rand.New(rand.NewPCG(uint64(T), uint64(D)))
		x := make([]float64, B*T*D)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		want := naive(x, B, T, D)
		for _, m := range []string{"fft", "gemm", "fft-channel-first", "fft-channel-fft"} {
			f, err := New[float64](cfg(D, strings.SplitN(m, "-", 2)[0]))
			if err != nil {
				t.Fatal(err)
			}
			switch m {
			case "fft":
				setOrder(f, "time-first")
			case "fft-channel-first":
				setOrder(f, "channel-first")
			case "fft-channel-fft":
				setOrder(f, "channel-first")
				f.ChannelGemmMaxD = 0 // channel DFT by real FFTs of row pairs
			}
			got := make([]float64, len(x))
			f.Forward(got, nil, make([]float64, f.ScratchSize(B, T, 0)), x, mixer.Pass{B: B, T: T})
			var e float64
			for i := range got {
				e = math.Max(e, math.Abs(got[i]-want[i]))
			}
			if e > 1e-10*float64(T*D) {
				t.Errorf("B=%d T=%d D=%d %s: max abs err %.3g", B, T, D, m, e)
			}
		}
	}
}

// fft2Real is Re(FFT_time(FFT_channels(x))) by unbatched complex
// transforms of every column and every row (fft.Plan.Transform), an oracle
// independent of the batched time transform and the channel GEMM.
func fft2Real(x []float64, B, T, D int) []float64 {
	pt, pd := fft.NewPlan[float64](T), fft.NewPlan[float64](D)
	st := make([]float64, 2*max(pt.ScratchLen(), pd.ScratchLen()))
	out := make([]float64, len(x))
	zr, zi := make([]float64, T*D), make([]float64, T*D)
	cr, ci := make([]float64, T), make([]float64, T)
	for b := 0; b < B; b++ {
		copy(zr, x[b*T*D:(b+1)*T*D])
		clear(zi)
		for t := 0; t < T; t++ {
			pd.Transform(zr[t*D:(t+1)*D], zi[t*D:(t+1)*D], st)
		}
		for c := 0; c < D; c++ {
			for t := 0; t < T; t++ {
				cr[t], ci[t] = zr[t*D+c], zi[t*D+c]
			}
			pt.Transform(cr, ci, st)
			for t := 0; t < T; t++ {
				out[(b*T+t)*D+c] = cr[t]
			}
		}
	}
	return out
}

// TestLongT runs long sequences (T=8192, T=12000 with a width-11 last
// column block, and odd T=4097 for the time-first order) through the
// in-place time pass, in both orders, in float64 against
// fft2Real and in float32 on every kernels path against float64, forward
// and accumulating backward.
func TestLongT(t *testing.T) {
	for _, tc := range []struct {
		order   string
		B, T, D int
	}{{"time-first", 1, 8192, 64}, {"time-first", 2, 12000, 20}, {"time-first", 1, 4097, 19},
		{"channel-first", 1, 8192, 32}, {"channel-first", 2, 12000, 20}} {
		B, T, D := tc.B, tc.T, tc.D
		rng := rand.New(rand.NewPCG(uint64(T), uint64(D)))
		x := make([]float64, B*T*D)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		want := fft2Real(x, B, T, D)
		f64, _ := New[float64](cfg(D, "fft"))
		setOrder(f64, tc.order)
		p := mixer.Pass{B: B, T: T}
		got := make([]float64, len(x))
		f64.Forward(got, nil, make([]float64, f64.ScratchSize(B, T, 0)), x, p)
		var e, scale float64
		for i := range got {
			e = math.Max(e, math.Abs(got[i]-want[i]))
			scale = math.Max(scale, math.Abs(want[i]))
		}
		if e > 1e-12*scale {
			t.Errorf("%s B=%d T=%d D=%d float64: max err %.3g (scale %.3g)", tc.order, B, T, D, e, scale)
		}
		f32, _ := New[float32](cfg(D, "fft"))
		setOrder(f32, tc.order)
		ones := make([]float64, len(x))
		for i := range ones {
			ones[i] = 1
		}
		for _, path := range kernels.Paths() {
			out, dx32 := run32(f32, path, x, ones, p)
			var e, ed float64
			for i := range x {
				e = math.Max(e, math.Abs(float64(out[i])-want[i]))
				ed = math.Max(ed, math.Abs(float64(dx32[i])-1-want[i]))
			}
			if e > 1e-5*scale || ed > 1e-5*scale {
				t.Errorf("%s B=%d T=%d D=%d path %v: forward err %.3g, backward err %.3g (scale %.3g)", tc.order, B, T, D, path, e, ed, scale)
			}
		}
	}
}

// TestAdjoint checks ⟨A x, y⟩ = ⟨x, A y⟩ and that Backward applies A.
func TestAdjoint(t *testing.T) {
	for _, m := range []string{"fft", "gemm", "fft-channel-first"} {
		B, T, D := 2, 21, 10
		f, _ := New[float64](cfg(D, strings.TrimSuffix(m, "-channel-first")))
		if m == "fft-channel-first" {
			setOrder(f, "channel-first")
		}
		rng := rand.New(rand.NewPCG(3, 4))
		x, y := make([]float64, B*T*D), make([]float64, B*T*D)
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		scr := make([]float64, f.ScratchSize(B, T, 0))
		p := mixer.Pass{B: B, T: T}
		ax, ay := make([]float64, len(x)), make([]float64, len(x))
		f.Forward(ax, nil, scr, x, p)
		f.Forward(ay, nil, scr, y, p)
		var l, r float64
		for i := range x {
			l += ax[i] * y[i]
			r += x[i] * ay[i]
		}
		if math.Abs(l-r) > 1e-9*math.Abs(l) {
			t.Errorf("%s: <Ax,y> = %.12g, <x,Ay> = %.12g", m, l, r)
		}
		dx := make([]float64, len(x))
		for i := range dx {
			dx[i] = 1
		}
		f.Backward(dx, scr, y, nil, x, p)
		for i := range dx {
			if math.Abs(dx[i]-1-ay[i]) > 1e-9*(1+math.Abs(ay[i])) {
				t.Fatalf("%s: backward[%d] = 1 + %.12g, want 1 + %.12g", m, i, dx[i]-1, ay[i])
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    mixer.Config
		want string
	}{
		{mixer.Config{D: 8, Causal: true, Opts: mixer.OptionsOf("fnet", nil)}, "causal"},
		{mixer.Config{D: 8, Opts: mixer.OptionsOf("fnet", map[string]any{"window": 3})}, "window"},
		{mixer.Config{D: 8, Opts: mixer.OptionsOf("fnet", map[string]any{"method": "dct"})}, "mixer.method"},
		{mixer.Config{D: 8, Opts: mixer.OptionsOf("fnet", map[string]any{"method": 3})}, "mixer.method"},
	} {
		_, err := New[float32](tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %+v: error %v, want one naming %q", tc.c, err, tc.want)
		}
	}
}

func benchApply(b *testing.B, method string, T int, backward bool) {
	const D = 256
	f, _ := New[float32](cfg(D, method))
	x := make([]float32, T*D)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	out := make([]float32, T*D)
	scr := make([]float32, f.ScratchSize(1, T, 0))
	p := mixer.Pass{B: 1, T: T}
	b.ResetTimer()
	c0 := stat.ProcessCPU()
	for i := 0; i < b.N; i++ {
		if backward {
			f.Backward(out, scr, x, nil, x, p)
		} else {
			f.Forward(out, nil, scr, x, p)
		}
	}
	b.ReportMetric(float64(stat.ProcessCPU()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkForward(b *testing.B) {
	for _, T := range []int{8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384} {
		for _, m := range []string{"fft", "gemm"} {
			if m == "gemm" && T > 4096 {
				continue
			}
			b.Run(fmt.Sprintf("%s/T=%d", m, T), func(b *testing.B) { benchApply(b, m, T, false) })
		}
	}
}

// BenchmarkBackward times the accumulating backward (dx += A·dout) of the
// FFT path.
func BenchmarkBackward(b *testing.B) {
	for _, T := range []int{1024, 4096, 16384} {
		b.Run(fmt.Sprintf("fft/T=%d", T), func(b *testing.B) { benchApply(b, "fft", T, true) })
	}
}

// BenchmarkOrderAB alternates the time-first and channel-first orders
// iteration by iteration (forward and accumulating backward, d=256, and
// d=512, 1024 at T=2048) and reports each one's wall time per call and the
// ratios of wall and CPU time, so that both see the same machine load.
func BenchmarkOrderAB(b *testing.B) {
	type dt struct{ D, T int }
	var cases []dt
	for _, T := range []int{8, 16, 32, 64, 256, 1023, 1024, 4096, 16384} {
		cases = append(cases, dt{256, T})
	}
	cases = append(cases, dt{512, 2048}, dt{768, 2048}, dt{1024, 2048}, dt{2048, 512})
	for _, c := range cases {
		for _, bwd := range []bool{false, true} {
			name := fmt.Sprintf("fwd/D=%d/T=%d", c.D, c.T)
			if bwd {
				name = fmt.Sprintf("bwd/D=%d/T=%d", c.D, c.T)
			}
			b.Run(name, func(b *testing.B) { benchOrderAB(b, c.D, c.T, bwd) })
		}
	}
}

func benchOrderAB(b *testing.B, D, T int, bwd bool) {
	var fs [2]*FNet[float32]
	for i, o := range orders {
		fs[i], _ = New[float32](cfg(D, "fft"))
		setOrder(fs[i], o)
	}
	x := make([]float32, T*D)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	out := make([]float32, T*D)
	scr := make([]float32, max(fs[0].ScratchSize(1, T, 0), fs[1].ScratchSize(1, T, 0)))
	p := mixer.Pass{B: 1, T: T}
	var wall, cpu [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, f := range fs {
			w0, c0 := time.Now(), stat.ProcessCPU()
			if bwd {
				f.Backward(out, scr, x, nil, x, p)
			} else {
				f.Forward(out, nil, scr, x, p)
			}
			cpu[j] += stat.ProcessCPU() - c0
			wall[j] += time.Since(w0)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(wall[0])/n, "tf-ns/op")
	b.ReportMetric(float64(wall[1])/n, "cf-ns/op")
	b.ReportMetric(float64(wall[0])/float64(wall[1]), "tf/cf-wall")
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "tf/cf-cpu")
}
