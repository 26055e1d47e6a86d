package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/tokenmix/tokenmix"
)

// stopFlags collects repeated --stop values.
type stopFlags []string

func (s *stopFlags) String() string     { return strings.Join(*s, ",") }
func (s *stopFlags) Set(v string) error { *s = append(*s, v); return nil }

// runGenerate is `tokenmix generate`: continue a prompt with a causal lm,
// writing the bytes of its tokens to stdout as they are produced.
func runGenerate(ctx context.Context, args []string) error {
	fs := newFlags("generate")
	dir := fs.String("run", "", "run directory or exported model (a causal lm)")
	prompt := fs.String("prompt", "", "the text to continue (its bytes are the tokens, or its tokenizer's ids where the model has one)")
	maxTokens := fs.Int("max-tokens", 256, "most tokens to generate (0: until max_len)")
	temp := fs.Float64("temperature", 0.8, "sampling temperature; 0 picks the most probable token")
	topK := fs.Int("top-k", 0, "draw from the k most probable tokens only (0: all)")
	topP := fs.Float64("top-p", 0.95, "draw from the smallest set of most probable tokens whose probability reaches p (1: all)")
	seed := fs.Uint64("seed", 0, "seed of the draws")
	var stops stopFlags
	fs.Var(&stops, "stop", "stop when the output ends with this text, which is left out (repeatable)")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	asJSON := fs.Bool("json", false, "print one JSON object per token (id; text, the token's bytes, each byte that is not valid UTF-8 alone replaced by U+FFFD; log_prob), then one with the finish reason")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *prompt == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := loadModel(*dir, *step, *precision)
	if err != nil {
		return err
	}
	o := tokenmix.GenerateOptions{MaxTokens: *maxTokens, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed}
	for _, s := range stops {
		o.Stop = append(o.Stop, m.Encode(s))
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	o.OnToken = func(tk tokenmix.Token) error {
		if *asJSON {
			return enc.Encode(map[string]any{"id": tk.ID, "text": m.Text([]int32{tk.ID}), "log_prob": tk.LogProb})
		}
		b, err := m.Decode([]int32{tk.ID})
		if err != nil {
			return err
		}
		if _, err := w.WriteString(b); err != nil {
			return err
		}
		return w.Flush()
	}
	res, err := m.Generate(ctx, m.Encode(*prompt), o)
	if err != nil {
		return err
	}
	if *asJSON {
		return enc.Encode(map[string]any{"finish_reason": res.FinishReason, "tokens": len(res.Tokens)})
	}
	return w.WriteByte('\n')
}
