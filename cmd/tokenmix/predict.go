package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
)

// predictChunk is how many input lines one model call takes.
const predictChunk = 256

// runPredict is `tokenmix predict`: one result object per input line, in
// order: a Prediction for a classifier, a Score for a causal lm.
func runPredict(ctx context.Context, args []string) error {
	fs := newFlags("predict")
	dir := fs.String("run", "", "run directory or exported model")
	input := fs.String("input", "", "input file: JSONL lines {\"text\": …} or {\"tokens\": […]} (other fields ignored), or plain text lines (default: stdin)")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := loadModel(*dir, *step, *precision)
	if err != nil {
		return err
	}
	switch m.Config().Task {
	case "tag":
		return tagLines(ctx, m, *input)
	case "embed":
		return embedLines(ctx, m, *input)
	}
	recs, err := readInputs(*input, false, m)
	if err != nil {
		return err
	}
	if err := checkInputs(m, recs); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for lo := 0; lo < len(recs); lo += predictChunk {
		seqs := recordSeqs(recs[lo:min(lo+predictChunk, len(recs))])
		var out []any
		if m.Config().Task == "classify" {
			preds, err := m.Classify(ctx, seqs)
			if err != nil {
				return err
			}
			for _, p := range preds {
				out = append(out, p)
			}
		} else {
			scores, err := m.Score(ctx, seqs)
			if err != nil {
				return err
			}
			for _, s := range scores {
				out = append(out, s)
			}
		}
		for _, o := range out {
			if err := enc.Encode(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// runEmbed is `tokenmix embed`: an embedder's vector of each input line,
// one {"embedding": […]} object per line, in order.
func runEmbed(ctx context.Context, args []string) error {
	fs := newFlags("embed")
	dir := fs.String("run", "", "run directory or exported model of an embedder (task \"embed\"), or of a classifier (its pooled representation)")
	input := fs.String("input", "", "input file: JSONL lines {\"text\": …} or {\"tokens\": […]} (other fields ignored), or plain text lines (default: stdin)")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := loadModel(*dir, *step, "fp32")
	if err != nil {
		return err
	}
	if t := m.Config().Task; t != "embed" && t != "classify" {
		return fmt.Errorf("embed: %s is a model of task %q: embed needs an embedder (task \"embed\") or a classifier (its pooled representation)", *dir, t)
	}
	return embedLines(ctx, m, *input)
}

// embedLines prints m's embedding of each input line of path (stdin when
// empty).
func embedLines(ctx context.Context, m *tokenmix.Model, path string) error {
	recs, err := readInputs(path, false, m)
	if err != nil {
		return err
	}
	if err := checkInputs(m, recs); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for lo := 0; lo < len(recs); lo += predictChunk {
		embs, err := m.Embed(ctx, recordSeqs(recs[lo:min(lo+predictChunk, len(recs))]))
		if err != nil {
			return err
		}
		for _, e := range embs {
			if err := enc.Encode(map[string]any{"embedding": e}); err != nil {
				return err
			}
		}
	}
	return nil
}

// runTag is `tokenmix tag`: a tagger's labelled spans of each input line,
// one {"spans": […]} object per line, in order.
func runTag(ctx context.Context, args []string) error {
	fs := newFlags("tag")
	dir := fs.String("run", "", "run directory or exported model of a tagger (task \"tag\")")
	input := fs.String("input", "", "input file: JSONL lines {\"text\": …} or {\"tokens\": […]} (other fields ignored), or plain text lines (default: stdin)")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to use (default: the newest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := loadModel(*dir, *step, "fp32")
	if err != nil {
		return err
	}
	if m.Config().Task != "tag" {
		return fmt.Errorf("tag: %s is a model of task %q, not a tagger (task \"tag\")", *dir, m.Config().Task)
	}
	return tagLines(ctx, m, *input)
}

// tagLines prints the spans m finds in each input line of path (stdin
// when empty): offsets are bytes of a text line, or of the tokens' text.
func tagLines(ctx context.Context, m *tokenmix.Model, path string) error {
	recs, err := readLines(path, false)
	if err != nil {
		return err
	}
	c := m.Config()
	lim := data.Limits{Vocab: c.VocabSize, MaxLen: c.MaxLen, PadID: -1}
	for _, r := range recs {
		if r.Text && m.Tokenizer() == nil && len(r.Tokens) > c.MaxLen {
			return fmt.Errorf("%s: %d bytes, longer than max_len %d", r.Where, len(r.Tokens), c.MaxLen)
		}
		if !r.Text {
			if err := lim.Check(r); err != nil {
				return err
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for lo := 0; lo < len(recs); lo += predictChunk {
		chunk := recs[lo:min(lo+predictChunk, len(recs))]
		// Text lines are tagged through Tag, token lines through
		// TagTokens, each kind in one call per chunk.
		var texts []string
		var toks [][]int32
		for _, r := range chunk {
			if r.Text {
				b := make([]byte, len(r.Tokens))
				for i, t := range r.Tokens {
					b[i] = byte(t)
				}
				texts = append(texts, string(b))
			} else {
				toks = append(toks, r.Tokens)
			}
		}
		var fromText, fromTokens [][]tokenmix.Span
		if len(texts) > 0 {
			if fromText, err = m.Tag(ctx, texts); err != nil {
				return err
			}
		}
		if len(toks) > 0 {
			if fromTokens, err = m.TagTokens(ctx, toks); err != nil {
				return err
			}
		}
		for _, r := range chunk {
			var spans []tokenmix.Span
			if r.Text {
				spans, fromText = fromText[0], fromText[1:]
			} else {
				spans, fromTokens = fromTokens[0], fromTokens[1:]
			}
			if err := enc.Encode(map[string]any{"spans": spans}); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadModel loads a run or exported model for predict, eval and generate.
func loadModel(dir string, step int, precision string) (*tokenmix.Model, error) {
	opts := []tokenmix.Option{tokenmix.WithPrecision(precision)}
	if step >= 0 {
		opts = append(opts, tokenmix.WithCheckpoint(step))
	}
	return tokenmix.Load(dir, opts...)
}

// readInputs reads JSONL or plain text lines from path, or stdin when path
// is empty (readLines), as m's tokens.
func readInputs(path string, labelled bool, m *tokenmix.Model) ([]data.Record, error) {
	recs, err := readLines(path, labelled)
	if err == nil {
		data.Retokenize(recs, m.Tokenizer())
	}
	return recs, err
}

// readLines reads JSONL or plain text lines from path, or stdin when path
// is empty, a text's tokens its bytes; labelled asks for a "label" on
// every line (and JSONL only).
func readLines(path string, labelled bool) ([]data.Record, error) {
	if path != "" {
		return data.ReadRecords(path, labelled, !labelled)
	}
	return data.ParseRecords(os.Stdin, "stdin", labelled, !labelled)
}

// checkInputs checks every record against the model's limits, naming the
// line of the first that does not fit.
func checkInputs(m *tokenmix.Model, recs []data.Record) error {
	c := m.Config()
	lim := data.Limits{Vocab: c.VocabSize, MaxLen: c.MaxLen, PadID: -1}
	if c.PadID != nil {
		lim.PadID = *c.PadID
	}
	for _, r := range recs {
		if err := lim.Check(r); err != nil {
			return err
		}
		if c.Task == "lm" && len(r.Tokens) < 2 {
			return fmt.Errorf("%s: 1 token: scoring needs at least 2 (position 0 has no context)", r.Where)
		}
	}
	return nil
}

func recordSeqs(recs []data.Record) [][]int32 {
	seqs := make([][]int32, len(recs))
	for i, r := range recs {
		seqs[i] = r.Tokens
	}
	return seqs
}
