package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// decodePoint is one line of `tokenmix bench decode --json`.
type decodePoint struct {
	Pos        int     `json:"pos"`
	MsPerToken float64 `json:"ms_per_token"`
	StateBytes int64   `json:"state_bytes"`
}

// runBenchDecode is `tokenmix bench decode`: prefill speed, time to the
// first token, and the latency of one more token at positions 256, 1024
// and 4096 (those below max_len), one stream at each, stepped in turn,
// with its state's bytes.
func runBenchDecode(ctx context.Context, args []string) error {
	fs := newFlags("bench decode")
	dir := fs.String("run", "", "run directory or exported model (a causal lm)")
	cfgPath := fs.String("config", "", "or a model config (random weights)")
	reps := fs.Int("reps", 16, "tokens timed at each position (median reported)")
	streams := fs.Int("streams", 16, "also time StepStreams over this many streams at position 256, in turn with one stream alone (0: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object per position")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dir == "") == (*cfgPath == "") || *reps < 1 || *streams < 0 || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *cfgPath != "" {
		tmp, err := os.MkdirTemp("", "tokenmix-decode")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := randomModel(*cfgPath, tmp); err != nil {
			return err
		}
		*dir = tmp
	}
	m, err := tokenmix.Load(*dir, tokenmix.WithPrecision(*precision))
	if err != nil {
		return err
	}
	c := m.Config()
	s, err := m.NewStream(tokenmix.StreamOptions{})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 1))
	next := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(c.VocabSize))
		}
		return t
	}
	// Prefill: the first 256 positions (or fewer) in one Append.
	pre := min(256, c.MaxLen-*reps-1)
	if pre < 1 {
		return usageErr("bench decode: max_len %d leaves no room for --reps %d", c.MaxLen, *reps)
	}
	t0 := time.Now()
	if _, err := s.Append(ctx, next(pre)...); err != nil {
		return err
	}
	ttft := time.Since(t0)
	if !*asJSON {
		fmt.Printf("decode: %s, d=%d, %d layers, %s, %d thread(s); prefill %d tokens in %.1f ms (%.0f tokens/s, the time to the first token)\n",
			c.Mixer, c.DModel, c.NLayers, c.Precision, parallel.Threads(), pre, ms(ttft), float64(pre)/ttft.Seconds())
	}
	// One stream per position, each brought there by Appends of at most
	// 1024 tokens, then stepped one token at a time in turn, so that the
	// positions' latencies are measured under the same load.
	var points []int
	var at []*tokenmix.Stream
	for _, pos := range []int{256, 1024, 4096} {
		if pos+*reps > c.MaxLen {
			break
		}
		ps := s
		if len(at) > 0 {
			if ps, err = m.NewStream(tokenmix.StreamOptions{}); err != nil {
				return err
			}
		}
		for ps.Len() < pos {
			if _, err := ps.Append(ctx, next(min(1024, pos-ps.Len()))...); err != nil {
				return err
			}
		}
		points, at = append(points, pos), append(at, ps)
	}
	times := make([][]float64, len(at))
	for range *reps {
		for k, ps := range at {
			tok := next(1)
			t := time.Now()
			if _, err := ps.Append(ctx, tok...); err != nil {
				return err
			}
			times[k] = append(times[k], ms(time.Since(t)))
		}
	}
	for k, pos := range points {
		slices.Sort(times[k])
		p := decodePoint{Pos: pos, MsPerToken: times[k][len(times[k])/2], StateBytes: at[k].CacheBytes()}
		if *asJSON {
			if err := printJSON(p); err != nil {
				return err
			}
			continue
		}
		fmt.Printf("position %5d: %.3f ms per token, state %s\n", p.Pos, p.MsPerToken, mib(p.StateBytes))
	}
	at = nil
	if *streams == 0 || 256+*reps > c.MaxLen {
		return nil
	}
	// StepStreams: every stream at position 256, stepped together, timed
	// step by step in turn with one more stream at position 256 stepped
	// alone, so that the ratio compares the two under the same load.
	ss := make([]*tokenmix.Stream, *streams+1)
	for i := range ss {
		if ss[i], err = m.NewStream(tokenmix.StreamOptions{}); err != nil {
			return err
		}
		if _, err := ss[i].Append(ctx, next(256)...); err != nil {
			return err
		}
	}
	alone, together := ss[0], ss[1:]
	tAlone, tTogether := make([]float64, *reps), make([]float64, *reps)
	for i := range *reps {
		t := time.Now()
		if _, err := alone.Append(ctx, next(1)...); err != nil {
			return err
		}
		tAlone[i] = ms(time.Since(t))
		t = time.Now()
		if _, err := m.StepStreams(ctx, together, next(*streams)); err != nil {
			return err
		}
		tTogether[i] = ms(time.Since(t))
	}
	slices.Sort(tAlone)
	slices.Sort(tTogether)
	one, perStep := tAlone[*reps/2], tTogether[*reps/2]
	speedup := float64(*streams) * one / perStep
	if *asJSON {
		return printJSON(map[string]any{"streams": *streams, "pos": 256, "ms_per_step": perStep, "tokens_per_s": float64(*streams) / perStep * 1000,
			"one_stream_ms_per_token": one, "speedup": speedup})
	}
	fmt.Printf("%d streams at position 256, stepped together: %.3f ms per step, %.0f tokens/s, %.2f× one stream's (%.3f ms per token, timed in turn)\n",
		*streams, perStep, float64(*streams)/perStep*1000, speedup, one)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// randomModel writes a model directory (config.json, weights.safetensors)
// with freshly initialised weights for the config at path.
func randomModel(path, dir string) error {
	cfg, err := model.LoadConfig(path)
	if err != nil {
		return err
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		return err
	}
	m.Init(1)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		return err
	}
	return m.WeightsFile().WriteFile(filepath.Join(dir, "weights.safetensors"))
}
