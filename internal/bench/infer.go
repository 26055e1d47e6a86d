package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/onnx"
)

// InferResult is one `tokenmix bench infer` measurement: tokenmix's
// inference forward (what Model.Logits and Classify run) against ONNX
// Runtime on the same model's ONNX export, same batch, length and threads.
type InferResult struct {
	Kind       string  `json:"kind"`
	B          int     `json:"batch"`
	T          int     `json:"len"`
	Threads    int     `json:"threads"`
	Rounds     int     `json:"rounds"`
	Tokenmix   float64 `json:"tokenmix_seqs_per_s"` // median over the rounds
	ORT        float64 `json:"onnxruntime_seqs_per_s"`
	TokenmixMs float64 `json:"tokenmix_ms"` // median latency of one batch
	ORTMs      float64 `json:"onnxruntime_ms"`
	Ratio      float64 `json:"ratio"` // median over rounds of tokenmix ÷ ONNX Runtime sequences/s
	ORTVersion string  `json:"onnxruntime_version"`
}

// Infer times config c's inference forward at batch B and length T on
// threads threads, in tokenmix and in ONNX Runtime for Node
// (scripts/onnxruntime.mjs with the node_modules dir modules) on the same
// weights, alternated: each of rounds rounds runs reps timed batches of
// each after one warm-up, and takes the median per batch. The ratio is
// the median of the rounds' ratios (each round's engines share the
// machine's state of the moment).
func Infer(c *model.Config, B, T, threads, rounds, reps int, modules, script string) (InferResult, error) {
	if T > c.MaxLen {
		return InferResult{}, fmt.Errorf("bench: len %d exceeds max_len %d", T, c.MaxLen)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return InferResult{}, fmt.Errorf("bench infer: ONNX Runtime runs in Node, and node is not on PATH")
	}
	m, err := model.New[float32](c)
	if err != nil {
		return InferResult{}, err
	}
	m.Init(1)
	m.Threads = threads
	f, err := onnx.Export(m, onnx.Options{Version: "bench"})
	if err != nil {
		return InferResult{}, err
	}
	dir, err := os.MkdirTemp("", "tokenmix-bench-infer-")
	if err != nil {
		return InferResult{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, f.Model, 0o644); err != nil {
		return InferResult{}, err
	}
	if f.Data != nil {
		if err := os.WriteFile(filepath.Join(dir, f.DataName), f.Data, 0o644); err != nil {
			return InferResult{}, err
		}
	}
	// Tokens spread over the vocabulary, never pad_id; the Node side
	// reads the same ones on its stdin.
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(i * 7919 % c.VocabSize)
		if c.PadID != nil && int(tokens[i]) == *c.PadID {
			tokens[i] = int32((*c.PadID + 1) % c.VocabSize)
		}
	}
	tokJSON, err := json.Marshal(tokens)
	if err != nil {
		return InferResult{}, err
	}
	r := InferResult{Kind: c.Mixer.Kind, B: B, T: T, Threads: threads, Rounds: rounds}
	var gos, orts, ratios []float64
	for range rounds {
		if _, err := m.Forward(tokens, nil, B, T); err != nil { // warm-up
			return r, err
		}
		var ms []float64
		for range reps {
			t0 := time.Now()
			if _, err := m.Forward(tokens, nil, B, T); err != nil {
				return r, err
			}
			ms = append(ms, time.Since(t0).Seconds()*1e3)
		}
		goMs := stat.Median(ms)
		cmd := exec.Command(node, script, modules, "bench", path, strconv.Itoa(B), strconv.Itoa(T), strconv.Itoa(threads), strconv.Itoa(reps))
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stderr = bytes.NewReader(tokJSON), &stderr
		out, err := cmd.Output()
		if err != nil {
			return r, fmt.Errorf("bench infer: onnxruntime: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		var o struct {
			Ms      []float64 `json:"ms"`
			Version string    `json:"version"`
		}
		if err := json.Unmarshal(out, &o); err != nil || len(o.Ms) == 0 {
			return r, fmt.Errorf("bench infer: onnxruntime output %q: %v", out, err)
		}
		r.ORTVersion = o.Version
		ortMs := stat.Median(o.Ms)
		gos, orts, ratios = append(gos, goMs), append(orts, ortMs), append(ratios, ortMs/goMs)
	}
	r.TokenmixMs, r.ORTMs, r.Ratio = stat.Median(gos), stat.Median(orts), stat.Median(ratios)
	r.Tokenmix, r.ORT = float64(B)/r.TokenmixMs*1e3, float64(B)/r.ORTMs*1e3
	return r, nil
}
