package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// DecodeOptions configure Decode.
type DecodeOptions struct {
	Reps    int  // tokens timed at each position (median reported)
	Streams int  // StepStreams over this many streams at position 256, in turn with one stream alone (0: skip)
	JSON    bool // one JSON object per position instead of text lines
}

// Check returns an error for options Decode cannot run on a model of
// maximum length maxLen: reps < 1, streams < 0, or no room for a prefill
// and reps more tokens.
func (o DecodeOptions) Check(maxLen int) error {
	if o.Reps < 1 || o.Streams < 0 {
		return errors.New("want --reps ≥ 1 and --streams ≥ 0")
	}
	if min(256, maxLen-o.Reps-1) < 1 {
		return fmt.Errorf("max_len %d leaves no room for --reps %d", maxLen, o.Reps)
	}
	return nil
}

// decodePoint is one line of `tokenmix bench decode --json`.
type decodePoint struct {
	Pos        int     `json:"pos"`
	MsPerToken float64 `json:"ms_per_token"`
	StateBytes int64   `json:"state_bytes"`
}

// Decode measures streaming decoding of the causal lm m and writes the
// report to w. Random tokens (a fixed seed) feed every stream.
//   - Prefill: the first 256 positions (or fewer) in one Append; its time
//     is the time to the first token.
//   - Per-token latency at positions 256, 1024 and 4096 (those below
//     max_len): one stream per position, each brought there by Appends of
//     at most 1024 tokens, then all stepped one token at a time in turn,
//     o.Reps rounds, so that the positions are measured under the same
//     load; each figure is the median, with the stream's state bytes.
//   - StepStreams (o.Streams > 0): o.Streams streams at position 256
//     stepped together, timed step by step in turn with one more stream
//     at position 256 stepped alone, o.Reps rounds; the medians give
//     tokens/s and the speed-up over the single stream.
func Decode(ctx context.Context, w io.Writer, m *tokenmix.Model, o DecodeOptions) error {
	c := m.Config()
	if err := o.Check(c.MaxLen); err != nil {
		return err
	}
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
	pre := min(256, c.MaxLen-o.Reps-1)
	t0 := time.Now()
	if _, err := s.Append(ctx, next(pre)...); err != nil {
		return err
	}
	ttft := time.Since(t0)
	if !o.JSON {
		fmt.Fprintf(w, "decode: %s, d=%d, %d layers, %s, %d thread(s); prefill %d tokens in %.1f ms (%.0f tokens/s, the time to the first token)\n",
			c.Mixer, c.DModel, c.NLayers, c.Precision, parallel.Threads(), pre, ms(ttft), float64(pre)/ttft.Seconds())
	}
	var points []int
	var at []*tokenmix.Stream
	for _, pos := range []int{256, 1024, 4096} {
		if pos+o.Reps > c.MaxLen {
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
	for range o.Reps {
		for k, ps := range at {
			tok := next(1)
			t := time.Now()
			if _, err := ps.Append(ctx, tok...); err != nil {
				return err
			}
			times[k] = append(times[k], ms(time.Since(t)))
		}
	}
	enc := json.NewEncoder(w)
	for k, pos := range points {
		p := decodePoint{Pos: pos, MsPerToken: stat.Median(times[k]), StateBytes: at[k].CacheBytes()}
		if o.JSON {
			if err := enc.Encode(p); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "position %5d: %.3f ms per token, state %s\n", p.Pos, p.MsPerToken, MiB(p.StateBytes))
	}
	at = nil
	if o.Streams == 0 || 256+o.Reps > c.MaxLen {
		return nil
	}
	ss := make([]*tokenmix.Stream, o.Streams+1)
	for i := range ss {
		if ss[i], err = m.NewStream(tokenmix.StreamOptions{}); err != nil {
			return err
		}
		if _, err := ss[i].Append(ctx, next(256)...); err != nil {
			return err
		}
	}
	alone, together := ss[0], ss[1:]
	tAlone, tTogether := make([]float64, o.Reps), make([]float64, o.Reps)
	for i := range o.Reps {
		t := time.Now()
		if _, err := alone.Append(ctx, next(1)...); err != nil {
			return err
		}
		tAlone[i] = ms(time.Since(t))
		t = time.Now()
		if _, err := m.StepStreams(ctx, together, next(o.Streams)); err != nil {
			return err
		}
		tTogether[i] = ms(time.Since(t))
	}
	one, perStep := stat.Median(tAlone), stat.Median(tTogether)
	speedup := float64(o.Streams) * one / perStep
	if o.JSON {
		return enc.Encode(map[string]any{"streams": o.Streams, "pos": 256, "ms_per_step": perStep, "tokens_per_s": float64(o.Streams) / perStep * 1000,
			"one_stream_ms_per_token": one, "speedup": speedup})
	}
	fmt.Fprintf(w, "%d streams at position 256, stepped together: %.3f ms per step, %.0f tokens/s, %.2f× one stream's (%.3f ms per token, timed in turn)\n",
		o.Streams, perStep, float64(o.Streams)/perStep*1000, speedup, one)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// OpenModel loads the model in dir with opts, or, when dir is "", a model
// of the config file cfgPath with freshly initialised weights (seed 1),
// written to a temporary directory that is removed once it is loaded.
func OpenModel(dir, cfgPath string, opts ...tokenmix.Option) (*tokenmix.Model, error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tokenmix-bench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := randomModel(cfgPath, tmp); err != nil {
			return nil, err
		}
		dir = tmp
	}
	return tokenmix.Load(dir, opts...)
}

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
