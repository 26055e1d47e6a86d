package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// evalResult is what `tokenmix eval --json` prints.
type evalResult struct {
	// Inputs is the number of labelled inputs (classify), scored bytes
	// (lm) or scored targets (--task); Tokens, for an lm that reads text
	// through a tokenizer, the tokens that cover those bytes; Windows the
	// number of windows, or of a task's sequences, scored (lm).
	Inputs      int      `json:"inputs"`
	Tokens      int      `json:"tokens,omitempty"`
	Windows     int      `json:"windows,omitempty"`
	Loss        float64  `json:"loss"`               // mean cross-entropy, nats
	Accuracy    *float64 `json:"accuracy,omitempty"` // classify, or a task measured by accuracy
	BitsPerByte float64  `json:"bits_per_byte,omitempty"`
	// Spans, Precision, Recall and F1 measure a tagger's spans (exact
	// start, end and label) against the gold ones.
	Spans int `json:"spans,omitempty"`
	// RecallAt1 and MRR measure an embedder's retrieval on pairs, in
	// groups of 32 (each text's positive among 32).
	RecallAt1 *float64 `json:"recall_at_1,omitempty"`
	MRR       *float64 `json:"mrr,omitempty"`
	Precision *float64 `json:"precision,omitempty"`
	Recall    *float64 `json:"recall,omitempty"`
	F1        *float64 `json:"f1,omitempty"`
}

// spanTask is a task that knows its examples' texts and gold spans.
type spanTask interface {
	Text(s data.Split, i int) []byte
	Spans(s data.Split, i int) []data.Span
}

// scoreSpans tags texts with m and sets r's span measures against gold.
func scoreSpans(ctx context.Context, m *tokenmix.Model, texts []string, gold [][]data.Span, r *evalResult) error {
	got, err := m.Tag(ctx, texts)
	if err != nil {
		return err
	}
	pred := make([][]data.Span, len(got))
	for i, ss := range got {
		for _, sp := range ss {
			pred[i] = append(pred[i], data.Span{Start: sp.Start, End: sp.End, Label: sp.Label})
		}
	}
	p, rc, f1 := data.SpanScores(gold, pred)
	for _, g := range gold {
		r.Spans += len(g)
	}
	r.Precision, r.Recall, r.F1 = &p, &rc, &f1
	return nil
}

// evalEmbed measures an embedder's retrieval on JSONL pairs {"text",
// "positive"}: recall@1 and MRR in groups of 32.
func evalEmbed(ctx context.Context, m *tokenmix.Model, path string) (evalResult, error) {
	recs, err := data.ReadRecords(path, false, false)
	if err != nil {
		return evalResult{}, err
	}
	var texts, positives [][]int32
	for _, rec := range recs {
		if rec.Positive == nil {
			return evalResult{}, fmt.Errorf("%s: an embedder is measured on pairs {\"text\": …, \"positive\": …}", rec.Where)
		}
		texts, positives = append(texts, rec.Tokens), append(positives, rec.Positive)
	}
	data.Retokenize(recs, m.Tokenizer())
	for i, rec := range recs {
		texts[i], positives[i] = rec.Tokens, rec.Positive
	}
	et, err := m.Embed(ctx, texts)
	if err != nil {
		return evalResult{}, err
	}
	ep, err := m.Embed(ctx, positives)
	if err != nil {
		return evalResult{}, err
	}
	r1, mrr := data.RetrievalScores(et, ep, 32)
	return evalResult{Inputs: len(recs), RecallAt1: &r1, MRR: &mrr}, nil
}

// evalTag measures a tagger's spans on JSONL lines {"text", "spans"}.
func evalTag(ctx context.Context, m *tokenmix.Model, path string) (evalResult, error) {
	recs, err := data.ReadRecords(path, false, false)
	if err != nil {
		return evalResult{}, err
	}
	var texts []string
	var gold [][]data.Span
	for _, rec := range recs {
		if !rec.Text || rec.Spans == nil {
			return evalResult{}, fmt.Errorf("%s: a tagger is measured on lines {\"text\": …, \"spans\": […]}", rec.Where)
		}
		b := make([]byte, len(rec.Tokens))
		for i, t := range rec.Tokens {
			b[i] = byte(t)
		}
		texts, gold = append(texts, string(b)), append(gold, rec.Spans)
	}
	r := evalResult{Inputs: len(texts)}
	return r, scoreSpans(ctx, m, texts, gold, &r)
}

// runEval is `tokenmix eval`: a classifier's loss and accuracy on labelled
// JSONL, a causal lm's bits per byte on a text file or directory (what
// train --data reads), or a model's metric on a split of a task of the task
// list (what train --task and the arena train on), all measured by
// data.Evaluate.
func runEval(ctx context.Context, args []string) error {
	fs := newFlags("eval")
	dir := fs.String("run", "", "run directory or exported model")
	path := fs.String("data", "", "classify: JSONL lines with \"label\"; lm: a text file or directory")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	ctxLen := fs.Int("context", -1, "lm: bytes of context every scored byte has at least: windows of W tokens (the training seq_len, else max_len) step by W−context; 0: fixed windows, as train validates (default: three quarters of the window)")
	split := fs.String("split", "all", "lm: all of the text, or train or val: the split train makes of it with --val-frac")
	valFrac := fs.Float64("val-frac", 0.05, "lm: with --split, the fraction of the text train kept for validation")
	task := fs.String("task", "", "instead of --data: a task of the task list, a name or its JSON object (as train --task and a preset's task); --split train, val or test (default test) picks the split, scored in the task's own windows")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || (*path == "") == (*task == "") || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *task != "" {
		if set["context"] || set["val-frac"] {
			return usageErr("eval --task: --context and --val-frac apply to --data text; the task sets its splits and windows")
		}
		if !set["split"] {
			*split = "test"
		}
		s, ok := map[string]data.Split{"train": data.Train, "val": data.Val, "test": data.Test}[*split]
		if !ok {
			return usageErr("eval --task: --split: want train, val or test, got %q", *split)
		}
		m, err := loadModel(*dir, *step, *precision)
		if err != nil {
			return err
		}
		r, info, err := evalTask(ctx, m, *task, s)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(r)
		}
		switch {
		case info.Metric == data.BitsPerByte:
			fmt.Printf("%s %s: %d bytes in %d windows: %.4f bits per byte (loss %.4f nats)\n", info.Name, s, r.Inputs, r.Windows, r.BitsPerByte, r.Loss)
		case r.F1 != nil:
			fmt.Printf("%s %s: %d targets: loss %.4f, accuracy %.2f%%; %d spans: precision %.4f, recall %.4f, F1 %.4f\n",
				info.Name, s, r.Inputs, r.Loss, 100**r.Accuracy, r.Spans, *r.Precision, *r.Recall, *r.F1)
		default:
			fmt.Printf("%s %s: %d targets: loss %.4f, accuracy %.2f%%\n", info.Name, s, r.Inputs, r.Loss, 100**r.Accuracy)
		}
		return nil
	}
	if *split != "all" && *split != "train" && *split != "val" {
		return usageErr("eval: --split: want all, train or val, got %q", *split)
	}
	m, err := loadModel(*dir, *step, *precision)
	if err != nil {
		return err
	}
	var r evalResult
	switch m.Config().Task {
	case "embed":
		if *split != "all" {
			return usageErr("eval: --split applies to an lm's text, not to an embedder's pairs")
		}
		r, err = evalEmbed(ctx, m, *path)
	case "classify", "tag":
		if *split != "all" {
			return usageErr("eval: --split applies to an lm's text, not to a classifier's or a tagger's JSONL")
		}
		if m.Config().Task == "tag" {
			r, err = evalTag(ctx, m, *path)
		} else {
			r, err = evalClassify(ctx, m, *path)
		}
	default:
		var text []byte
		if text, err = data.ReadText(*path); err == nil {
			if *split != "all" {
				var c *data.TextCorpus
				if c, err = data.SplitText(text, *valFrac); err == nil {
					text = map[string][]byte{"train": c.Train, "val": c.Val}[*split]
				}
			}
			if err == nil {
				r, err = scoreText(ctx, m, text, *ctxLen)
			}
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(r)
	}
	switch m.Config().Task {
	case "embed":
		fmt.Printf("%d pairs in groups of 32: recall@1 %.4f, MRR %.4f\n", r.Inputs, *r.RecallAt1, *r.MRR)
	case "tag":
		fmt.Printf("%d inputs, %d spans: precision %.4f, recall %.4f, F1 %.4f\n", r.Inputs, r.Spans, *r.Precision, *r.Recall, *r.F1)
	case "classify":
		fmt.Printf("%d inputs: loss %.4f, accuracy %.2f%%\n", r.Inputs, r.Loss, 100**r.Accuracy)
	default:
		fmt.Printf("%d bytes in %d windows: %.4f bits per byte (loss %.4f nats)\n", r.Inputs, r.Windows, r.BitsPerByte, r.Loss)
	}
	return nil
}

// evalClassify scores labelled JSONL lines: labels are the model's label
// names, or class indices for a model without names.
func evalClassify(ctx context.Context, m *tokenmix.Model, path string) (evalResult, error) {
	recs, err := readInputs(path, true, m)
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
	t := &inputs{seqs: recordSeqs(recs), want: make([]int32, len(recs)),
		info: data.Info{Name: "inputs", Mode: data.Classify, Vocab: c.VocabSize, Classes: c.NClasses,
			PadID: -1, MaxLen: c.MaxLen, Metric: data.Accuracy}}
	for i, r := range recs {
		k, ok := index[r.Label]
		if !ok {
			return evalResult{}, fmt.Errorf("%s: label %q is not one of the model's classes %q", r.Where, r.Label, c.LabelNames)
		}
		t.want[i] = int32(k)
	}
	ev, err := data.Evaluate(publicForward(ctx, m), t, data.Test, evalBatchOf(t.info), 0, 0)
	if err != nil {
		return evalResult{}, err
	}
	return evalResult{Inputs: ev.Targets, Loss: ev.Loss, Accuracy: &ev.Accuracy}, nil
}

// evalTask scores split s of the task of --task (a name or its JSON object,
// read as train --task reads it, and checked to fit m's config) with
// data.Evaluate, in the task's own examples and windows: the figure the
// arena reports for that split.
func evalTask(ctx context.Context, m *tokenmix.Model, arg string, s data.Split) (evalResult, data.Info, error) {
	cfg, err := model.ParseConfig(m.Config().JSON)
	if err != nil {
		return evalResult{}, data.Info{}, err
	}
	task, err := listTask("eval", arg, cfg)
	if err != nil {
		return evalResult{}, data.Info{}, err
	}
	info := task.Info()
	ev, err := data.Evaluate(publicForward(ctx, m), task, s, evalBatchOf(info), 0, 0)
	if err != nil {
		return evalResult{}, info, err
	}
	r := evalResult{Inputs: ev.Targets, Loss: ev.Loss}
	if info.Mode == data.LM {
		r.Windows = ev.Examples
	}
	if st, ok := task.(spanTask); ok && info.Mode == data.Tag {
		var texts []string
		var gold [][]data.Span
		for i := range task.Len(s) {
			texts, gold = append(texts, string(st.Text(s, i))), append(gold, st.Spans(s, i))
		}
		if err := scoreSpans(ctx, m, texts, gold, &r); err != nil {
			return r, info, err
		}
	}
	if info.Metric == data.BitsPerByte {
		r.BitsPerByte = ev.Metric
	} else {
		r.Accuracy = &ev.Accuracy
	}
	return r, info, nil
}

// scoreText scores every token of text after the first with a causal lm
// (its bytes, or its tokenizer's ids), in windows of W tokens, W the
// training window (train.seq_len, else max_len), that step by W−context
// (data.Windows): the first window scores all its tokens, each later one
// only its last W−context, so every token is scored once with at least
// context tokens before it. Bits per byte divide by the bytes the scored
// tokens cover.
func scoreText(ctx context.Context, m *tokenmix.Model, text []byte, context int) (evalResult, error) {
	c := m.Config()
	W := c.MaxLen
	if c.SeqLen > 0 {
		W = min(W, c.SeqLen)
	}
	if context < 0 {
		context = 3 * W / 4
	}
	if W < 1 || context >= W {
		return evalResult{}, fmt.Errorf("eval: --context %d must be below the window of %d tokens", context, W)
	}
	tk := m.Tokenizer()
	x := data.TextOf(text, tk)
	if x.Len() < 2 {
		return evalResult{}, fmt.Errorf("eval: the text has %d tokens; scoring needs at least 2", x.Len())
	}
	task, err := data.NewTextWindows(x, W, context, tk)
	if err != nil {
		return evalResult{}, err
	}
	ev, err := data.Evaluate(publicForward(ctx, m), task, data.Val, evalBatchOf(task.Info()), 0, 0)
	if err != nil {
		return evalResult{}, err
	}
	r := evalResult{Inputs: ev.Bytes, Windows: ev.Examples, Loss: ev.Loss, BitsPerByte: ev.Metric}
	if tk != nil {
		r.Tokens = ev.Targets
	}
	return r, nil
}

// evalBatch is the number of inputs, or of 64-token windows, per call of
// the model.
const evalBatch = 256

// evalBatchOf is the examples per call of the model for a task: evalBatch
// inputs, or for a language model as many windows of info.MaxLen tokens
// as evalBatch 64-token windows hold (at least one).
func evalBatchOf(info data.Info) int {
	if info.Mode != data.LM {
		return evalBatch
	}
	return max(1, evalBatch*64/max(1, info.MaxLen))
}

// publicForward is m's forward pass for data.Evaluate: each row of the
// batch without its padding, through Model.Logits.
func publicForward(ctx context.Context, m *tokenmix.Model) data.Forward {
	return func(b *data.Batch) ([]float32, error) {
		seqs := make([][]int32, b.B)
		for r := range seqs {
			seqs[r] = b.Tokens[r*b.T : r*b.T+b.Lens[r]]
		}
		lg, err := m.Logits(ctx, seqs)
		if err != nil {
			return nil, err
		}
		return lg.Data, nil
	}
}

// inputs is labelled sequences as a data.Task whose every split is all of
// them.
type inputs struct {
	seqs [][]int32
	want []int32
	info data.Info
}

func (t *inputs) Info() data.Info                    { return t.info }
func (t *inputs) Len(data.Split) int                 { return len(t.seqs) }
func (t *inputs) ExampleLen(_ data.Split, i int) int { return len(t.seqs[i]) }
func (t *inputs) Example(tokens, targets []int32, _ data.Split, i int) {
	copy(tokens, t.seqs[i])
	targets[0] = t.want[i]
}
