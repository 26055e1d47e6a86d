package pattern

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/sparse"
	"github.com/tokenmix/tokenmix/mixer"
)

// TestPixelsMatchLayout draws strided, fixed and full patterns, decodes the
// PNG and checks the centre pixel of every cell of every panel against the
// kernel layout (and the layout against the naive definition), and every
// cell of the 2-D query view.
func TestPixelsMatchLayout(t *testing.T) {
	for _, tc := range []struct {
		kind    mixer.Kind
		opts    map[string]any
		causal  bool
		layers  int
		T, grid int
	}{
		{sparse.Kinds()[0], map[string]any{"block": 8, "combine": "heads"}, true, 1, 64, 8},
		{sparse.Kinds()[1], map[string]any{"block": 8, "summary": 2, "combine": "interleave"}, true, 2, 64, 8},
		{sparse.Kinds()[1], map[string]any{"block": 5, "summary": 2, "combine": "merge"}, false, 1, 37, 7},
		{full.Kinds()[0], nil, true, 1, 300, 0},
	} {
		c := mixer.Config{D: 8, Heads: 2, MaxLen: tc.T, Causal: tc.causal, NLayers: tc.layers, Opts: mixer.OptionsOf(tc.kind.Name, tc.opts)}
		maps, err := Maps(tc.kind, c, tc.layers, tc.T, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := tc.T - 3
		var buf bytes.Buffer
		if err := Draw(&buf, maps, tc.grid, q); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		g := Layout(tc.layers, 2, tc.T, tc.grid)
		T := tc.T
		for l := 0; l < tc.layers; l++ {
			cl := c
			cl.Layer = l
			m, _ := tc.kind.New64(cl)
			a := m.(*attn.Attention[float64])
			for h := 0; h < 2; h++ {
				allowed := a.Connectivity(h, T)
				x0, y0 := g.X0+h*g.Step, g.Y0+l*g.RowStep
				for i := 0; i < T; i++ {
					for j := 0; j < T; j++ {
						if allowed[i*T+j] != a.Pat.Allow(h, T, i, j) {
							t.Fatalf("%s L%d H%d: layout and Allow disagree at (%d,%d)", tc.kind.Name, l, h, i, j)
						}
						if g.Down > 1 {
							continue
						}
						want := Light
						if allowed[i*T+j] {
							want = Dark
						}
						px, py := x0+j*g.Cell+g.Cell/2, y0+i*g.Cell+g.Cell/2
						if got := color.RGBAModel.Convert(img.At(px, py)); got != want {
							t.Fatalf("%s L%d H%d cell (%d,%d) at pixel (%d,%d): got %v want %v", tc.kind.Name, l, h, i, j, px, py, got, want)
						}
					}
				}
				if g.Down > 1 {
					checkDownsampled(t, img, allowed, T, g, x0, y0)
				}
				if tc.grid == 0 {
					continue
				}
				W, cs := tc.grid, g.GridCell
				for p := 0; p < W*W; p++ {
					want := Paper
					switch {
					case p == q:
						want = Query
					case p < T && allowed[q*T+p]:
						want = Dark
					case p < T:
						want = Light
					}
					px, py := x0+p%W*cs+cs/2, y0+g.GridDY+p/W*cs+cs/2
					if got := color.RGBAModel.Convert(img.At(px, py)); got != want {
						t.Fatalf("%s L%d H%d grid position %d: got %v want %v", tc.kind.Name, l, h, p, got, want)
					}
				}
			}
		}
	}
}

// checkDownsampled checks that each pixel's shade is the fraction of
// allowed cells it covers.
func checkDownsampled(t *testing.T, img image.Image, allowed []bool, T int, g Geometry, x0, y0 int) {
	t.Helper()
	v := make([]float64, T*T)
	for i, ok := range allowed {
		if ok {
			v[i] = 1
		}
	}
	m := Map{T: T, V: v}
	for py := 0; py < g.Side; py++ {
		for px := 0; px < g.Side; px++ {
			want := shade(cellMean(m, py*g.Down, px*g.Down, g.Down))
			if got := color.RGBAModel.Convert(img.At(x0+px, y0+py)); got != want {
				t.Fatalf("downsampled pixel (%d,%d): got %v want %v", px, py, got, want)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	c := mixer.Config{D: 8, Heads: 2, MaxLen: 16, Causal: true, NLayers: 1, Opts: mixer.OptionsOf("full", nil)}
	maps, err := Maps(full.Kinds()[0], c, 1, 16, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if Draw(&buf, maps, 3, 0) == nil {
		t.Error("3×3 grid for T=16 accepted")
	}
	if Draw(&buf, maps, 4, 16) == nil {
		t.Error("query 16 for T=16 accepted")
	}
	if Draw(&buf, nil, 0, 0) == nil {
		t.Error("empty maps accepted")
	}
}

// TestHeat checks WeightMap's zero fraction (causal cells only), that no
// positive weight, however small, is drawn Zero, and that a downsampled
// heat-map pixel is Zero exactly when all the cells it covers are 0.
func TestHeat(t *testing.T) {
	for _, v := range []float64{math.SmallestNonzeroFloat64, 1e-12, 0.01, 0.5, 1, 2} {
		if c := HeatColour(v); c == Zero {
			t.Errorf("HeatColour(%g) is Zero", v)
		}
	}
	if HeatColour(0) != Zero || HeatColour(1) != Dark {
		t.Errorf("HeatColour(0) = %v, HeatColour(1) = %v", HeatColour(0), HeatColour(1))
	}
	// T = 3, causal: 6 allowed cells, of which 2 are 0.
	v := []float64{1, 0, 0, 0, 1, 0, 0.5, 0.5, 0}
	if m := WeightMap(0, 0, 3, v, true); math.Abs(m.Zeros-2.0/6) > 1e-15 || !m.Heat {
		t.Errorf("causal zeros %g, want 1/3", m.Zeros)
	}
	if m := WeightMap(0, 0, 3, v, false); math.Abs(m.Zeros-5.0/9) > 1e-15 {
		t.Errorf("bidirectional zeros %g, want 5/9", m.Zeros)
	}
	// T = 300 (downsampled 2×2): sparse random weights with tiny values.
	const T = 300
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, T*T)
	for i := range w {
		if rng.IntN(5) == 0 {
			w[i] = 1e-9 * rng.Float64()
		}
	}
	maps := [][]Map{{WeightMap(0, 0, T, w, false)}}
	img, err := Render(maps, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := Layout(1, 1, T, 0)
	if g.Down != 2 {
		t.Fatalf("Down = %d, want 2", g.Down)
	}
	zeros := 0
	for py := 0; py < g.Side; py++ {
		for px := 0; px < g.Side; px++ {
			all := true
			for i := py * 2; i < py*2+2; i++ {
				for j := px * 2; j < px*2+2; j++ {
					all = all && w[i*T+j] == 0
				}
			}
			got := img.RGBAAt(g.X0+px, g.Y0+py)
			if (got == Zero) != all {
				t.Fatalf("pixel (%d,%d): %v, all-zero cells %v", px, py, got, all)
			}
			if all {
				zeros++
			}
		}
	}
	if zeros == 0 || zeros == g.Side*g.Side {
		t.Errorf("%d of %d pixels zero: the test input is degenerate", zeros, g.Side*g.Side)
	}
}
