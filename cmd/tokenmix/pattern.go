package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tokenmix/tokenmix/internal/data"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/plot/pattern"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// runPattern is `tokenmix pattern`: a PNG of every layer's and head's
// attention connectivity for a model config, and optionally the 2-D view of
// one query on a W×W image grid. With --weights it instead draws heat maps
// of the attention weights of trained weights on an input (--text bytes or
// --tokens-file ids), each layer's mixer applied to that layer's actual
// input LN1(x).
func runPattern(ctx context.Context, args []string) error {
	fs := newFlags("pattern")
	cfgPath := fs.String("config", "", "model config JSON (required)")
	T := fs.Int("len", 0, "sequence length T (default max_len; with --weights, the input's length)")
	out := fs.String("out", "", "output PNG path (required)")
	grid := fs.Int("grid", 0, "also draw query --query on a W×W image grid (W·W ≥ T)")
	query := fs.Int("query", -1, "query position for --grid (default: the middle of the last grid row)")
	wPath := fs.String("weights", "", "draw the attention weights of these model weights (safetensors) on --text or --tokens-file")
	textIn := fs.String("text", "", "with --weights: the input text (its bytes, or its tokenizer's ids when the config names one)")
	tokPath := fs.String("tokens-file", "", "with --weights: the input as a file of token ids (integers separated by spaces, commas or newlines)")
	layer := fs.Int("layer", -1, "with --weights: draw only this layer (default all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *wPath == "" && (*textIn != "" || *tokPath != "" || *layer >= 0) {
		return usageErr("pattern: --text, --tokens-file and --layer need --weights")
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	var maps [][]pattern.Map
	if *wPath != "" {
		if *T != 0 {
			return usageErr("pattern: --len does not apply with --weights (T is the input's length)")
		}
		tk, err := run.OpenTokenizer(filepath.Dir(*cfgPath), cfg)
		if err != nil {
			return err
		}
		tokens, err := patternInput(*textIn, *tokPath, tk)
		if err != nil {
			return err
		}
		*T = len(tokens)
		wf, err := safetensors.ReadFile(*wPath)
		if err != nil {
			return err
		}
		if maps, err = weightMaps(cfg, wf, tokens, *layer); err != nil {
			return err
		}
	}
	if *T == 0 {
		*T = cfg.MaxLen
	}
	if *T < 1 {
		return usageErr("pattern: --len must be positive")
	}
	if *grid < 0 || *grid > 0 && *grid**grid < *T {
		return usageErr("pattern: --grid %d: want W with W·W ≥ T = %d", *grid, *T)
	}
	if *query < 0 {
		w := max(*grid, 1)
		*query = min(*T-1, (*T-1)/w*w+w/2)
	}
	if *query >= *T {
		return usageErr("pattern: --query %d outside [0,%d)", *query, *T)
	}
	if maps == nil {
		c := mixer.Config{D: cfg.DModel, Heads: cfg.NHeads, MaxLen: max(cfg.MaxLen, *T), Causal: cfg.Causal,
			NLayers: cfg.NLayers, Opts: cfg.Mixer}
		if maps, err = pattern.Maps(cfg.Kind(), c, cfg.NLayers, *T, nil, nil); err != nil {
			return err
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := pattern.Draw(f, maps, *grid, *query); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	what := "connectivity"
	if *wPath != "" {
		what = "attention weights"
	}
	fmt.Printf("wrote %s: %s %s, %d layer(s) × %d head(s), T=%d\n", *out, cfg.Kind().Name, what, len(maps), cfg.NHeads, *T)
	return nil
}

// patternInput returns the token ids of exactly one of text (its bytes, or
// tk's ids when the config names a tokenizer) and the file at path
// (integers separated by white space or commas).
func patternInput(text, path string, tk *tokenizer.Tokenizer) ([]int32, error) {
	if (text == "") == (path == "") {
		return nil, usageErr("pattern: --weights needs exactly one of --text and --tokens-file")
	}
	if text != "" && tk != nil {
		return data.EncodeIDs(tk, text), nil
	}
	if text != "" {
		tokens := make([]int32, len(text))
		for i := 0; i < len(text); i++ {
			tokens[i] = int32(text[i])
		}
		return tokens, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tokens []int32
	for _, f := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pattern: %s: token %q: %v", path, f, err)
		}
		tokens = append(tokens, int32(v))
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("pattern: %s holds no token ids", path)
	}
	return tokens, nil
}

// weightMaps loads the weights wf into a float64 model of cfg, runs a
// forward on tokens [1,T] and returns, for every layer (or only layer when
// ≥ 0) and head, the heat map of the attention weights of that layer's
// mixer on that layer's input LN1(x) as captured by Model.MixerInput. The
// mixer kind must implement pattern.Weights (full, strided, fixed, entmax,
// topk); an input containing pad_id is refused because the weights are
// computed without padding.
func weightMaps(cfg *model.Config, wf *safetensors.File, tokens []int32, layer int) ([][]pattern.Map, error) {
	T := len(tokens)
	if layer >= cfg.NLayers {
		return nil, usageErr("pattern: --layer %d outside [0,%d)", layer, cfg.NLayers)
	}
	if cfg.PadID != nil && slices.Contains(tokens, int32(*cfg.PadID)) {
		return nil, fmt.Errorf("pattern: the input contains pad_id %d; attention weights are drawn without padding", *cfg.PadID)
	}
	m, err := model.New[float64](cfg)
	if err != nil {
		return nil, err
	}
	if _, ok := m.Mixer(0).(pattern.Weights); !ok {
		return nil, fmt.Errorf("pattern: kind %q does not report attention weights (supported: full, strided, fixed, entmax, topk)", cfg.Kind().Name)
	}
	if err := m.LoadWeights(wf); err != nil {
		return nil, err
	}
	inputs := make([][]float64, cfg.NLayers)
	m.MixerInput = func(i int, x []float64) { inputs[i] = slices.Clone(x) }
	if _, err := m.Forward(tokens, nil, 1, T); err != nil {
		return nil, err
	}
	var maps [][]pattern.Map
	for l := range cfg.NLayers {
		if layer >= 0 && l != layer {
			continue
		}
		var row []pattern.Map
		for h, v := range m.Mixer(l).(pattern.Weights).AttentionWeights(inputs[l], T) {
			row = append(row, pattern.WeightMap(l, h, T, v, cfg.Causal))
		}
		maps = append(maps, row)
	}
	return maps, nil
}
