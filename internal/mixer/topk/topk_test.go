package topk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/plot/pattern"
	"github.com/tokenmix/tokenmix/mixer"
)

// sortTopK is the oracle: sort the allowed scores, keep every entry ≥ the
// k-th largest, softmax over those.
func sortTopK(z []float64, k int) {
	var s []float64
	for _, v := range z {
		if !math.IsInf(v, -1) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		clear(z)
		return
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	th := s[min(k, len(s))-1]
	for j, v := range z {
		if v < th {
			z[j] = math.Inf(-1)
		}
	}
	softmax(z)
}

func softmax(z []float64) {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	if math.IsInf(mx, -1) {
		clear(z)
		return
	}
	var s float64
	for j, v := range z {
		z[j] = math.Exp(v - mx)
		s += z[j]
	}
	for j := range z {
		z[j] /= s
	}
}

func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.IntN(200)
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(1 + trial%40)) // many ties
		}
		s := append([]float64(nil), a...)
		sort.Sort(sort.Reverse(sort.Float64Slice(s)))
		k := 1 + rng.IntN(n)
		if got := KthLargest(append([]float64(nil), a...), k); got != s[k-1] {
			t.Fatalf("KthLargest(k=%d) = %v, want %v", k, got, s[k-1])
		}
		th, mx, full := kthLargestHeap(a, make([]float64, k))
		if !full || th != s[k-1] || mx != s[0] {
			t.Fatalf("kthLargestHeap(k=%d) = %v, %v, %v; want %v, %v, true", k, th, mx, full, s[k-1], s[0])
		}
		if _, mx, full := kthLargestHeap(a, make([]float64, n+1)); full || mx != s[0] {
			t.Fatalf("kthLargestHeap(k=n+1) = max %v, full %v; want %v, false", mx, full, s[0])
		}
	}
}

func TestRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 600; trial++ {
		n := 1 + rng.IntN(300)
		k := []int{1, 3, 8, 70, 100, 400}[trial%6] // heap and quickselect
		z := make([]float64, n)
		for j := range z {
			z[j] = float64(rng.IntN(50)) / 7 // ties
			if rng.IntN(4) == 0 {
				z[j] = math.Inf(-1)
			}
		}
		want := append([]float64(nil), z...)
		sortTopK(want, k)
		got := append([]float64(nil), z...)
		_, _, kept := Row(got, make([]float64, n), k)
		cnt := 0
		for _, p := range got {
			if p > 0 {
				cnt++
			}
		}
		if cnt != kept {
			t.Fatalf("n=%d k=%d: Row reports %d kept, has %d", n, k, kept, cnt)
		}
		for j := range z {
			if math.Abs(got[j]-want[j]) > 1e-12 {
				t.Fatalf("n=%d k=%d: p[%d] = %v, want %v", n, k, j, got[j], want[j])
			}
		}
	}
}

func capKind(c int) mixer.Kind {
	k := Kinds()[0]
	k.New32 = func(cfg mixer.Config) (mixer.Mixer[float32], error) {
		m, err := New[float32](cfg)
		if err == nil && c > 0 {
			m.Cap = c
		}
		if err == nil {
			m.Rows = 8 // several row blocks even for short sequences
		}
		return m, err
	}
	k.New64 = func(cfg mixer.Config) (mixer.Mixer[float64], error) {
		m, err := New[float64](cfg)
		if err == nil && c > 0 {
			m.Cap = c
		}
		if err == nil {
			m.Rows = 8
		}
		return m, err
	}
	return k
}

func cfg(d, h int, causal bool, k int) mixer.Config {
	return mixer.Config{D: d, Heads: h, MaxLen: 64, Causal: causal, NLayers: 1, Opts: mixer.OptionsOf("topk", map[string]any{"k": k})}
}

func TestConformance(t *testing.T) {
	for _, causal := range []bool{true, false} {
		for _, k := range []int{1, 3, 40} {
			for _, cp := range []int{0, 1} {
				B, T := 2, 37
				H := 3
				if k == 3 {
					B, H = 1, 3 // shares a head between two threads
				}
				c := cfg(12, H, causal, k)
				mc := mixertest.Case{Name: fmt.Sprintf("k=%d/causal=%v/cap=%d", k, causal, cp), Cfg: c, B: B, T: T, Pad: true, Setup: withGap(c, B, T, k)}
				mixertest.Run(t, capKind(cp), []mixertest.Case{mc})
				mc.Cfg = cfg(12, H, causal, k)
				t.Run(mc.Name+"/float32", func(t *testing.T) {
					for _, path := range kernels.Paths() {
						old := kernels.SetPath(path)
						mixertest.Float32Agrees(t, capKind(cp), mc, 5e-4)
						kernels.SetPath(old)
					}
				})
			}
		}
	}
}

// TestNaiveTwin compares Forward with the dense twin (sort-based top-k),
// and with k ≥ T against plain softmax attention, in both modes and with 1
// to 3 threads.
func TestNaiveTwin(t *testing.T) {
	defer parallel.SetThreads(parallel.SetThreads(1))
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{1, 5, 70, 100} {
		for _, causal := range []bool{true, false} {
			for _, cp := range []int{0, 1} {
				for threads := 1; threads <= 3; threads++ {
					parallel.SetThreads(threads)
					B, T, D, H := 2, 70, 12, 3
					m, err := New[float64](cfg(D, H, causal, k))
					if err != nil {
						t.Fatal(err)
					}
					if cp > 0 {
						m.Cap = cp
					}
					m.Rows = []int{attn.RowBlock, 8, 13}[threads-1]
					var w, g [][]float64
					for _, s := range m.Params() {
						w = append(w, randVec(rng, s.Size(), 0.3))
						g = append(g, make([]float64, s.Size()))
					}
					m.Bind(w, g)
					x := randVec(rng, B*T*D, 1)
					p := mixer.Pass{B: B, T: T, Pad: suitePad(B, T)}
					out := make([]float64, B*T*D)
					m.Forward(out, make([]float64, m.ActSize(B, T)), make([]float64, m.ScratchSize(B, T, 0)), x, p)
					row := func(z []float64, h int) { sortTopK(z, k) }
					if k >= T {
						row = func(z []float64, h int) { softmax(z) } // full attention
					}
					want := make([]float64, B*T*D)
					attn.NaiveRuleForward(want, x, w, D, H, causal, 0, p, row)
					var d float64
					for i := range out {
						d = max(d, math.Abs(out[i]-want[i]))
					}
					if d > 1e-9 {
						t.Errorf("k=%d causal=%v cap=%d threads=%d: max |out − naive| = %.3g", k, causal, cp, threads, d)
					}
				}
			}
		}
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]any
		ok   bool
	}{
		{nil, true},
		{map[string]any{"k": 1}, true},
		{map[string]any{"k": math.MaxInt}, true}, // every key
		{map[string]any{"k": 0}, false},
		{map[string]any{"k": 2.5}, false},
		{map[string]any{"alpha": 1.5}, false},
	} {
		c := mixer.Config{D: 8, Heads: 2, MaxLen: 16, Opts: mixer.OptionsOf("topk", tc.opts)}
		_, err := New[float32](c)
		if (err == nil) != tc.ok {
			t.Errorf("options %v: err = %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
}

func randVec(rng *rand.Rand, n int, sc float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() * sc
	}
	return v
}

// TestPatternWeights: plot/pattern draws top-k attention as heat maps; each
// causal row keeps min(k, i+1) keys and sums to 1.
func TestPatternWeights(t *testing.T) {
	const T, D, H, k = 12, 8, 2, 3
	rng := rand.New(rand.NewPCG(9, 9))
	x := randVec(rng, T*D, 1)
	bind := func(m mixer.Mixer[float64]) {
		var w, g [][]float64
		for _, s := range m.Params() {
			w = append(w, randVec(rng, s.Size(), 0.3))
			g = append(g, make([]float64, s.Size()))
		}
		m.Bind(w, g)
	}
	maps, err := pattern.Maps(Kinds()[0], cfg(D, H, true, k), 2, T, x, bind)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range maps {
		for _, mp := range row {
			for i := 0; i < T; i++ {
				var s float64
				nz := 0
				for _, v := range mp.V[i*T : (i+1)*T] {
					s += v
					if v > 0 {
						nz++
					}
				}
				if math.Abs(s-1) > 1e-12 || nz != min(k, i+1) {
					t.Fatalf("layer %d head %d row %d: Σp = %v with %d nonzeros", mp.Layer, mp.Head, i, s, nz)
				}
			}
		}
	}
}
