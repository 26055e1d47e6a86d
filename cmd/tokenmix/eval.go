package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/tokenmix/tokenmix"
)

// evalResult is what `tokenmix eval --json` prints.
type evalResult struct {
	// Inputs is the number of labelled inputs (classify) or scored bytes
	// (lm); Windows the number of windows scored (lm).
	Inputs      int      `json:"inputs"`
	Windows     int      `json:"windows,omitempty"`
	Loss        float64  `json:"loss"`               // mean cross-entropy, nats
	Accuracy    *float64 `json:"accuracy,omitempty"` // classify
	BitsPerByte float64  `json:"bits_per_byte,omitempty"`
}

// runEval is `tokenmix eval`: a classifier's loss and accuracy on labelled
// JSONL, or a causal lm's bits per byte on a text file.
func runEval(ctx context.Context, args []string) error {
	fs := newFlags("eval")
	dir := fs.String("run", "", "run directory or exported model")
	path := fs.String("data", "", "classify: JSONL lines with \"label\"; lm: a text file")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	ctxLen := fs.Int("context", -1, "lm: bytes of context every scored byte has at least: windows of W bytes (the training seq_len, at most max_len−1) step by W−context (default: three quarters of the window)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *path == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := loadModel(*dir, *step, *precision)
	if err != nil {
		return err
	}
	var r evalResult
	if m.Config().Task == "classify" {
		r, err = evalClassify(ctx, m, *path)
	} else {
		var text []byte
		if text, err = os.ReadFile(*path); err == nil {
			r, err = scoreText(ctx, m, text, *ctxLen)
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(r)
	}
	if m.Config().Task == "classify" {
		fmt.Printf("%d inputs: loss %.4f, accuracy %.2f%%\n", r.Inputs, r.Loss, 100**r.Accuracy)
	} else {
		fmt.Printf("%d bytes in %d windows: %.4f bits per byte (loss %.4f nats)\n", r.Inputs, r.Windows, r.BitsPerByte, r.Loss)
	}
	return nil
}

// evalClassify scores labelled JSONL lines: labels are the model's label
// names, or class indices for a model without names.
func evalClassify(ctx context.Context, m *tokenmix.Model, path string) (evalResult, error) {
	recs, err := readInputs(path, true)
	if err != nil {
		return evalResult{}, err
	}
	if err := checkInputs(m, recs); err != nil {
		return evalResult{}, err
	}
	c := m.Config()
	index := map[string]int{}
	for k := range c.NClasses {
		index[strconv.Itoa(k)] = k
	}
	if c.LabelNames != nil {
		index = map[string]int{}
		for k, n := range c.LabelNames {
			index[n] = k
		}
	}
	want := make([]int, len(recs))
	for i, r := range recs {
		k, ok := index[r.Label]
		if !ok {
			return evalResult{}, fmt.Errorf("%s: label %q is not one of the model's classes %q", r.Where, r.Label, c.LabelNames)
		}
		want[i] = k
	}
	lg, err := m.Logits(ctx, recordSeqs(recs))
	if err != nil {
		return evalResult{}, err
	}
	r := evalResult{Inputs: len(recs)}
	var correct int
	C := lg.Shape[1]
	for i, k := range want {
		row := lg.Data[i*C : (i+1)*C]
		best, mx := 0, row[0]
		for j, v := range row {
			if v > mx {
				best, mx = j, v
			}
		}
		var sum float64 // log-softmax in float64: no underflow to log(0)
		for _, v := range row {
			sum += math.Exp(float64(v - mx))
		}
		r.Loss -= float64(row[k]-mx) - math.Log(sum)
		if best == k {
			correct++
		}
	}
	r.Loss /= float64(len(recs))
	acc := float64(correct) / float64(len(recs))
	r.Accuracy = &acc
	return r, nil
}

// scoreText scores every byte of text after the first with a causal lm:
// windows of W bytes (plus the byte each last predicts) that step by
// S = W−context, W the training window (train.seq_len) or max_len−1, the
// smaller; the first window scores all its bytes, each later
// one only its last S, so every byte is scored once with at least context
// bytes before it (the arena's sliding-window evaluation).
func scoreText(ctx context.Context, m *tokenmix.Model, text []byte, context int) (evalResult, error) {
	c := m.Config()
	W := c.MaxLen - 1
	if c.SeqLen > 0 {
		W = min(W, c.SeqLen)
	}
	if context < 0 {
		context = 3 * W / 4
	}
	if W < 1 || context >= W {
		return evalResult{}, fmt.Errorf("eval: --context %d must be below the window of %d bytes", context, W)
	}
	if len(text) < 2 {
		return evalResult{}, fmt.Errorf("eval: the text has %d bytes; scoring needs at least 2", len(text))
	}
	ids := m.Encode(string(text))
	wins, first := textWindows(len(ids), W, context)
	seqs := make([][]int32, len(wins))
	for i, w := range wins {
		seqs[i] = ids[w[0]:w[1]]
	}
	scores, err := m.Score(ctx, seqs)
	if err != nil {
		return evalResult{}, err
	}
	r := evalResult{Windows: len(wins)}
	for i, s := range scores {
		for _, lp := range s.LogProbs[first[i]:] {
			r.Loss -= float64(lp)
			r.Inputs++
		}
	}
	r.Loss /= float64(r.Inputs)
	r.BitsPerByte = r.Loss / math.Ln2
	return r, nil
}

// textWindows cuts n tokens into windows [lo, hi) of at most W+1 tokens
// (W predictions each) stepping by W−context, and returns with each the
// index of its first scored prediction: 0 for the first window,
// W−(W−context) = context for the others, so each token after the first is
// predicted exactly once.
func textWindows(n, W, context int) (wins [][2]int, first []int) {
	S := W - context
	for lo := 0; ; lo += S {
		hi := min(lo+W+1, n)
		f := 0
		if lo > 0 {
			f = context
		}
		wins, first = append(wins, [2]int{lo, hi}), append(first, f)
		if hi == n {
			return wins, first
		}
	}
}
