package main

import (
	"context"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/plot/pattern"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

func TestRunPattern(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	err := os.WriteFile(cfg, []byte(`{"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16,
		"max_len": 20, "causal": true, "task": "lm",
		"mixer": {"kind": "fixed", "block": 4, "summary": 1, "combine": "interleave"}}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p.png")
	if err := runPattern(context.Background(), []string{"--config", cfg, "--len", "16", "--out", out, "--grid", "4"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g := pattern.Layout(2, 2, 16, 4)
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != g.X0+2*g.Step || h != g.Y0+2*g.RowStep-16 {
		t.Errorf("image %dx%d does not hold 2×2 panels with grids", w, h)
	}
	for _, bad := range [][]string{
		{"--config", cfg, "--out", out, "--len", "16", "--grid", "3"},
		{"--config", cfg, "--out", out, "--len", "16", "--query", "16"},
		{"--config", cfg},
	} {
		if runPattern(context.Background(), bad) == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// writeWeightsModel writes config JSON and float64 weights initialised with
// seed, q and k weights scaled by qkScale so that scores spread and entmax
// rows go sparse, and returns the paths and the model.
func writeWeightsModel(t *testing.T, dir, cfgJSON string, seed uint64, qkScale float64) (cfgPath, wPath string, m *model.Model[float64]) {
	t.Helper()
	cfgPath = filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfgPath, []byte(cfgJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := model.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = model.New[float64](cfg); err != nil {
		t.Fatal(err)
	}
	m.Init(seed)
	for l := range cfg.NLayers {
		for _, n := range []string{"q.weight", "k.weight"} {
			w, _, ok := m.Param(fmt.Sprintf("blocks.%d.mixer.%s", l, n))
			if !ok {
				t.Fatalf("no parameter blocks.%d.mixer.%s", l, n)
			}
			for i := range w {
				w[i] *= qkScale
			}
		}
	}
	wPath = filepath.Join(dir, "w.safetensors")
	if err := m.WeightsFile().WriteFile(wPath); err != nil {
		t.Fatal(err)
	}
	return cfgPath, wPath, m
}

// TestRunPatternWeights draws the attention weights of a seeded tiny model
// (sparsemax and 1.5-entmax with large q·k, where many weights are exactly
// 0; full attention, where only the causal mask is 0) on a text, decodes the
// PNG and checks every cell: exact zeros are Zero, other cells are their
// HeatColour and never Zero. The expected weights are recomputed from the
// model's own mixers on LN1 of the embeddings (layer 0, by hand) and on the
// captured block inputs (later layers).
func TestRunPatternWeights(t *testing.T) {
	const text = "the cat sat on the mat."
	T := len(text)
	for _, tc := range []struct {
		mixer     string
		causal    bool
		wantZeros bool // some allowed weight is exactly 0
	}{
		{`{"kind": "entmax", "alpha": 2}`, true, true},
		{`{"kind": "entmax", "alpha": 1.5, "learn_alpha": true}`, false, true},
		{`{"kind": "topk", "k": 3}`, true, true},
		{`{"kind": "full"}`, true, false},
	} {
		dir := t.TempDir()
		cfgJSON := fmt.Sprintf(`{"vocab_size": 128, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16,
			"max_len": 32, "causal": %v, "task": "lm", "mixer": %s}`, tc.causal, tc.mixer)
		cfgPath, wPath, m := writeWeightsModel(t, dir, cfgJSON, 7, 40)
		out := filepath.Join(dir, "heat.png")
		if err := runPattern(context.Background(), []string{"--config", cfgPath, "--weights", wPath, "--text", text, "--out", out}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// Expected weights: layer inputs captured by the hook, layer 0's
		// also checked against LN1(embed + pos) computed here.
		tokens := make([]int32, T)
		for i := range tokens {
			tokens[i] = int32(text[i])
		}
		inputs := make([][]float64, 2)
		m.MixerInput = func(l int, x []float64) { inputs[l] = slices.Clone(x) }
		if _, err := m.Forward(tokens, nil, 1, T); err != nil {
			t.Fatal(err)
		}
		checkLN1Embed(t, m, tokens, inputs[0])
		g := pattern.Layout(2, 2, T, 0)
		zeros, nonzeros := 0, 0
		for l := 0; l < 2; l++ {
			for h, v := range m.Mixer(l).(pattern.Weights).AttentionWeights(inputs[l], T) {
				x0, y0 := g.X0+h*g.Step, g.Y0+l*g.RowStep
				for i := 0; i < T; i++ {
					sum := 0.0
					for j := 0; j < T; j++ {
						w := v[i*T+j]
						sum += w
						px, py := x0+j*g.Cell+g.Cell/2, y0+i*g.Cell+g.Cell/2
						got := color.RGBAModel.Convert(img.At(px, py))
						switch {
						case w == 0 && got != pattern.Zero:
							t.Fatalf("%s L%d H%d (%d,%d): weight 0 drawn %v", tc.mixer, l, h, i, j, got)
						case w != 0 && (got == pattern.Zero || got != pattern.HeatColour(w)):
							t.Fatalf("%s L%d H%d (%d,%d): weight %g drawn %v", tc.mixer, l, h, i, j, w, got)
						case tc.causal && j > i && w != 0:
							t.Fatalf("%s L%d H%d (%d,%d): weight %g above the causal diagonal", tc.mixer, l, h, i, j, w)
						}
						if !tc.causal || j <= i {
							if w == 0 {
								zeros++
							} else {
								nonzeros++
							}
						}
					}
					if math.Abs(sum-1) > 1e-9 {
						t.Fatalf("%s L%d H%d row %d sums to %g", tc.mixer, l, h, i, sum)
					}
				}
			}
		}
		if nonzeros == 0 || (zeros > 0) != tc.wantZeros {
			t.Errorf("%s: %d exact zeros and %d nonzeros among allowed cells, want zeros: %v", tc.mixer, zeros, nonzeros, tc.wantZeros)
		}
		// --layer 1 draws one row of panels.
		if err := runPattern(context.Background(), []string{"--config", cfgPath, "--weights", wPath, "--text", text, "--out", out, "--layer", "1"}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLN1Embed checks that x is LayerNorm(embed[tokens] + pos) with block
// 0's LN1 parameters.
func checkLN1Embed(t *testing.T, m *model.Model[float64], tokens []int32, x []float64) {
	t.Helper()
	D := m.Config.DModel
	emb, _, _ := m.Param("embed.weight")
	pos, _, _ := m.Param("pos.weight")
	lw, _, _ := m.Param("blocks.0.ln1.weight")
	lb, _, ok := m.Param("blocks.0.ln1.bias")
	if !ok || len(x) != len(tokens)*D {
		t.Fatalf("block 0 input: %d values or missing parameters", len(x))
	}
	for i, tok := range tokens {
		e := make([]float64, D)
		mean := 0.0
		for c := range e {
			e[c] = emb[int(tok)*D+c] + pos[i*D+c]
			mean += e[c] / float64(D)
		}
		v := 0.0
		for c := range e {
			v += (e[c] - mean) * (e[c] - mean) / float64(D)
		}
		for c := range e {
			want := (e[c]-mean)/math.Sqrt(v+kernels.LayerNormEps)*lw[c] + lb[c]
			if math.Abs(x[i*D+c]-want) > 1e-9 {
				t.Fatalf("LN1 input (%d,%d): got %g want %g", i, c, x[i*D+c], want)
			}
		}
	}
}

func TestRunPatternWeightsErrors(t *testing.T) {
	dir := t.TempDir()
	cfgJSON := `{"vocab_size": 128, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16,
		"max_len": 32, "causal": true, "task": "lm", "mixer": {"kind": "entmax"}}`
	cfgPath, wPath, _ := writeWeightsModel(t, dir, cfgJSON, 1, 1)
	out := filepath.Join(dir, "p.png")
	toks := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(toks, []byte("1, 2 3\n4"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPattern(context.Background(), []string{"--config", cfgPath, "--weights", wPath, "--tokens-file", toks, "--out", out}); err != nil {
		t.Errorf("tokens file: %v", err)
	}
	// A weights file with a tensor the model lacks is an error.
	f, err := safetensors.ReadFile(wPath)
	if err != nil {
		t.Fatal(err)
	}
	f.SetF32("extra.weight", []int{2}, []float32{1, 2})
	extra := filepath.Join(dir, "extra.safetensors")
	if err := f.WriteFile(extra); err != nil {
		t.Fatal(err)
	}
	if err := runPattern(context.Background(), []string{"--config", cfgPath, "--weights", extra, "--text", "ab", "--out", out}); err == nil || !strings.Contains(err.Error(), "extra.weight") {
		t.Errorf("weights with an extra tensor: error %v", err)
	}
	long := strings.Repeat("x", 33)
	for _, bad := range [][]string{
		{"--config", cfgPath, "--out", out, "--text", "abc"},                                          // no --weights
		{"--config", cfgPath, "--out", out, "--weights", wPath},                                       // no input
		{"--config", cfgPath, "--out", out, "--weights", wPath, "--text", "a", "--tokens-file", toks}, // two inputs
		{"--config", cfgPath, "--out", out, "--weights", wPath, "--text", "ab", "--len", "2"},
		{"--config", cfgPath, "--out", out, "--weights", wPath, "--text", "ab", "--layer", "1"},
		{"--config", cfgPath, "--out", out, "--weights", wPath, "--text", long}, // T > max_len
		{"--config", cfgPath, "--out", out, "--weights", wPath, "--text", "é"},  // byte ≥ vocab_size
		{"--config", cfgPath, "--out", out, "--weights", filepath.Join(dir, "none"), "--text", "ab"},
	} {
		if runPattern(context.Background(), bad) == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// A kind without attention weights (FNet has no attention matrix).
	fdir := t.TempDir()
	fcfg, fw, _ := writeFNetWeights(t, fdir)
	err = runPattern(context.Background(), []string{"--config", fcfg, "--weights", fw, "--text", "abc", "--out", out})
	if err == nil || !strings.Contains(err.Error(), "does not report attention weights") {
		t.Errorf("fnet: got %v, want a no-attention-weights error", err)
	}
}

// writeFNetWeights writes an FNet config and its seeded weights.
func writeFNetWeights(t *testing.T, dir string) (cfgPath, wPath string, m *model.Model[float64]) {
	t.Helper()
	cfgPath = filepath.Join(dir, "c.json")
	err := os.WriteFile(cfgPath, []byte(`{"vocab_size": 128, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16,
		"max_len": 32, "causal": false, "task": "lm", "mixer": {"kind": "fnet"}}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = model.New[float64](cfg); err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	wPath = filepath.Join(dir, "w.safetensors")
	if err := m.WeightsFile().WriteFile(wPath); err != nil {
		t.Fatal(err)
	}
	return cfgPath, wPath, m
}
