package tokenmix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// readData reads the training and validation data: whole datasets at
// once, a stream's first streamPeek examples.
func (t *trainer) readData(ds Dataset, seed uint64) error {
	if w, ok := ds.(whole); ok {
		c, err := w.load(seed)
		if err != nil {
			return fmt.Errorf("training data: %w", err)
		}
		t.train = c
	} else {
		t.stream = ds
		n := streamPeek
		if c := t.cfg; c.Task != "" && c.VocabSize > 0 && c.MaxLen > 0 && (c.Task == "lm" || c.Labels != nil) {
			n = 1 // nothing to infer: training starts with the first example
		}
		for len(t.peek) < n {
			e, err := pull(ds)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("training data, example %d: %w", t.pulled, err)
			}
			r, err := record(e, fmt.Sprintf("stream example %d", t.pulled))
			if err != nil {
				return fmt.Errorf("training data: %w", err)
			}
			t.pulled++
			t.peek = append(t.peek, r)
		}
		if len(t.peek) == 0 {
			return fmt.Errorf("training data: the stream ended before its first example")
		}
	}
	if t.o.val == nil {
		return nil
	}
	if w, ok := t.o.val.(whole); ok {
		c, err := w.load(seed)
		if err != nil {
			return fmt.Errorf("validation data: %w", err)
		}
		t.val = c
		return nil
	}
	c := &content{}
	for {
		e, err := pull(t.o.val)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("validation data, example %d: %w", len(c.recs), err)
		}
		r, err := record(e, fmt.Sprintf("validation example %d", len(c.recs)))
		if err != nil {
			return fmt.Errorf("validation data: %w", err)
		}
		c.recs = append(c.recs, r)
	}
	if len(c.recs) == 0 {
		return fmt.Errorf("validation data: no examples")
	}
	t.val = c
	return nil
}

// recs is the training records Train infers from: all of them, or a
// stream's first.
func (t *trainer) recs() []data.Record {
	if t.train != nil {
		return t.train.recs
	}
	return t.peek
}

// openTokenizer opens the tokenizer the config names (relative to the
// working directory), or the task's, into t.tk.
func (t *trainer) openTokenizer(c *TrainConfig) error {
	if t.train != nil && t.train.task != nil {
		info := t.train.task.task.Info()
		if c.Tokenizer != "" {
			return fmt.Errorf("config: tokenizer: a task's tokens are the task's own (the tokenizer applies to text)")
		}
		t.tk = info.Tokenizer
		return nil
	}
	if c.Tokenizer == "" {
		return nil
	}
	var p tokenizer.Pattern
	if c.TokenizerPattern != "" {
		var err error
		if p, err = tokenizer.ParsePattern(c.TokenizerPattern); err != nil {
			return fmt.Errorf("config: tokenizer_pattern: %w", err)
		}
	}
	tk, err := tokenizer.Open(c.Tokenizer, p)
	if err != nil {
		return fmt.Errorf("config: tokenizer: %w", err)
	}
	t.tk = tk
	return nil
}

// resolve infers and defaults what cfg leaves out and parses the result
// into t.mc, with the class names in t.labels.
func (t *trainer) resolve() error {
	c := t.cfg
	if len(t.o.freeze) > 0 {
		c.Train.Freeze = append(slices.Clone(c.Train.Freeze), t.o.freeze...)
	}
	// The shape: the init model's, or Size's.
	if t.init != nil {
		if c.Tokenizer == "" && t.init.Tokenizer != nil {
			t.tk = t.init.Tokenizer
		}
		var ic TrainConfig
		if err := json.Unmarshal(t.init.Config, &ic); err != nil {
			return fmt.Errorf("WithInit: %s: %w", t.init.ConfigPath, err)
		}
		fill(&c.VocabSize, ic.VocabSize)
		fill(&c.DModel, ic.DModel)
		fill(&c.NHeads, ic.NHeads)
		fill(&c.NLayers, ic.NLayers)
		fill(&c.DFF, ic.DFF)
		fill(&c.MaxLen, ic.MaxLen)
		fill(&c.FFChunks, ic.FFChunks)
		fill(&c.Precision, ic.Precision)
		fill(&c.Dropout, ic.Dropout)
		if c.Causal == nil {
			c.Causal = ic.Causal
		}
		c.Reversible = c.Reversible || ic.Reversible
		c.Checkpoint = c.Checkpoint || ic.Checkpoint
		if c.PadID == nil {
			c.PadID = ic.PadID
		}
		if c.Mixer.Kind == "" {
			c.Mixer = ic.Mixer
		}
	}
	if t.tk == nil {
		if err := t.openTokenizer(&c); err != nil {
			return err
		}
	}
	sz, ok := sizes[c.Size]
	if c.Size == "" {
		sz = sizes["small"]
	} else if !ok {
		return fmt.Errorf("config: Size %q: want \"small\" or \"base\"", c.Size)
	}
	fill(&c.DModel, sz.d)
	fill(&c.NHeads, sz.heads)
	fill(&c.NLayers, sz.layers)
	fill(&c.DFF, sz.ff)
	fill(&c.Mixer.Kind, "full")

	tr := t.train
	switch {
	case tr != nil && tr.task != nil:
		info := tr.task.task.Info()
		fill(&c.Task, string(info.Mode))
		if info.Mode != data.LM {
			fill(&c.NClasses, info.Classes)
		}
		fill(&c.VocabSize, info.Vocab)
		fill(&c.MaxLen, info.MaxLen)
		if info.PadID >= 0 && c.PadID == nil {
			p := info.PadID
			c.PadID = &p
		}
		if c.Causal == nil {
			c.Causal = &info.Causal
		}
		t.labels = info.LabelNames
	case tr != nil && tr.isText:
		if c.Task != "" && c.Task != "lm" {
			return fmt.Errorf("config: task %q: text files train an lm; a classifier needs labelled examples (JSONLFile or Examples)", c.Task)
		}
		c.Task = "lm"
		fill(&c.VocabSize, 256)
		if t.tk != nil {
			fill(&c.VocabSize, t.tk.VocabSize())
		}
		fill(&c.MaxLen, sz.window)
	default:
		raw := t.recs()
		tagged := slices.ContainsFunc(raw, func(r data.Record) bool { return r.Spans != nil || r.Tags != nil })
		if c.Task == "" && tagged {
			c.Task = "tag"
		}
		paired := slices.ContainsFunc(raw, func(r data.Record) bool { return r.Positive != nil })
		if c.Task == "" && paired {
			c.Task = "embed"
		}
		if paired != (c.Task == "embed") {
			return fmt.Errorf("training data: an embedder (task \"embed\") trains on pairs {text, positive}, and pairs train nothing else; the task is %q", c.Task)
		}
		if tagged && c.Task != "tag" {
			return fmt.Errorf("training data: spans or tags in the data of task %q (they train task \"tag\")", c.Task)
		}
		if c.Task == "tag" {
			t.spanLabels = c.Labels
			if t.spanLabels == nil {
				t.spanLabels = data.SpanLabels(raw)
			}
			if len(t.spanLabels) == 0 {
				return fmt.Errorf("training data: no labelled spans or tags to learn")
			}
			t.labels = data.TagNames(t.spanLabels)
			fill(&c.NClasses, len(t.labels))
		}
		recs := cloneRecs(raw)
		if c.ChatTemplate == nil && slices.ContainsFunc(recs, func(r data.Record) bool { return r.Messages != nil }) {
			ct := DefaultChatTemplate
			c.ChatTemplate = &ct
		}
		if err := t.prepare(recs, c.ChatTemplate); err != nil {
			return fmt.Errorf("training data: %w", err)
		}
		labelled := 0
		for _, r := range recs {
			if r.Label != "" {
				labelled++
			}
		}
		if c.Task == "" {
			c.Task = "lm"
			if labelled > 0 {
				c.Task = "classify"
			}
		}
		if c.Task == "classify" {
			for _, r := range recs {
				if r.Label == "" {
					return fmt.Errorf("training data: %s: no \"label\" (a classifier needs one on every example)", r.Where)
				}
			}
			t.labels = c.Labels
			if t.labels == nil && tr != nil {
				t.labels = tr.labels
			}
			if t.labels == nil {
				t.labels = data.LabelNames(recs)
			}
			fill(&c.NClasses, len(t.labels))
		}
		maxID, minLen, maxLen := int32(-1), int(^uint(0)>>1), 0
		seen := recs
		if v := t.val; v != nil && !v.isText && v.task == nil {
			// The validation data must fit too: sizes from both.
			vr := cloneRecs(v.recs)
			if err := t.prepare(vr, c.ChatTemplate); err != nil {
				return fmt.Errorf("validation data: %w", err)
			}
			seen = append(slices.Clone(recs), vr...)
		}
		for _, r := range seen {
			for _, seq := range [][]int32{r.Tokens, r.Positive, r.Negative} {
				if seq == nil {
					continue
				}
				for _, v := range seq {
					maxID = max(maxID, v)
				}
				minLen, maxLen = min(minLen, len(seq)), max(maxLen, len(seq))
			}
		}
		// Room for inputs a little longer than the training data's.
		fill(&c.MaxLen, 1<<bits.Len(uint(maxLen-1)))
		if c.VocabSize == 0 {
			vocab := int(maxID) + 1
			switch {
			case t.tk != nil:
				vocab = max(vocab, t.tk.VocabSize())
			case recs[0].Text:
				vocab = max(vocab, 256)
			}
			// A classifier of inputs of different lengths pads, with an
			// id of its own.
			if (c.Task == "classify" || c.Task == "tag" || c.Task == "embed") && minLen != maxLen && c.PadID == nil {
				p := vocab
				c.PadID = &p
				vocab++
			}
			c.VocabSize = vocab
		}
	}
	if c.Causal == nil {
		causal := c.Task == "lm"
		c.Causal = &causal
	}
	if c.Train.SeqLen == 0 && c.Task == "lm" && tr != nil && tr.isText {
		c.Train.SeqLen = c.MaxLen
	}
	mc, err := c.parse()
	if err != nil {
		return err
	}
	if mc.Train == nil {
		mc.Train = model.DefaultTrainConfig(mc)
	}
	if t.tk != nil {
		if t.tk.VocabSize() > mc.VocabSize {
			return fmt.Errorf("config: the tokenizer has %d ids, above vocab_size %d", t.tk.VocabSize(), mc.VocabSize)
		}
		mc.Tokenizer, mc.TokenizerPattern = run.TokenizerName, ""
	}
	if (mc.Task == "classify" || mc.Task == "tag") && len(t.labels) != mc.NClasses && t.stream == nil {
		name := "the training data"
		if tr != nil && tr.name != "" {
			name = tr.name
		}
		return fmt.Errorf("%s has %d distinct labels (%s), the config's n_classes is %d", name, len(t.labels), strings.Join(t.labels, ", "), mc.NClasses)
	}
	t.mc = mc
	return nil
}

// fill sets *dst to v when *dst is zero.
func fill[T comparable](dst *T, v T) {
	var zero T
	if *dst == zero {
		*dst = v
	}
}

// resumeConfig takes a resumed run's saved config, after checking that a
// non-zero cfg resolves to it and that the data's labels are the run's.
func (t *trainer) resumeConfig(prev *run.Dir, saved *model.Config) error {
	tk, err := run.OpenTokenizer(t.out, saved)
	if err != nil {
		return err
	}
	if b, _ := json.Marshal(t.cfg); string(b) != string(mustJSON(TrainConfig{})) || t.cfg.Size != "" || len(t.o.freeze) > 0 {
		if err := t.resolve(); err != nil {
			return err
		}
		if k := configDiff(t.mc, saved); k != "" {
			return fmt.Errorf("%s holds a run whose config differs at %s from the one given (a zero TrainConfig resumes with the saved config)", t.out, k)
		}
	} else if saved.Task == "classify" {
		t.labels = prev.Info.LabelNames
		if t.train != nil && t.train.task == nil {
			if names := data.LabelNames(t.recs()); !slices.Equal(names, t.labels) && t.stream == nil {
				return fmt.Errorf("training data: its labels %q differ from the run's %q", names, t.labels)
			}
		}
	}
	t.mc, t.tk, t.labels = saved, tk, prev.Info.LabelNames
	if saved.Task == "tag" {
		t.spanLabels = spanLabelsOf(t.labels)
	}
	return nil
}

// spanLabelsOf is the span labels of BIO tag names (data.TagNames).
func spanLabelsOf(tags []string) []string {
	var out []string
	for _, t := range tags {
		if l, ok := strings.CutPrefix(t, "B-"); ok {
			out = append(out, l)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// configDiff names the first key at which a and b differ, "" when none
// does (the tokenizer's name aside: a run keeps its copy).
func configDiff(a, b *model.Config) string {
	var ma, mb map[string]any
	ca, cb := *a, *b
	ca.Tokenizer, ca.TokenizerPattern, cb.Tokenizer, cb.TokenizerPattern = "", "", "", ""
	json.Unmarshal(mustJSON(&ca), &ma)
	json.Unmarshal(mustJSON(&cb), &mb)
	return mapDiff("", ma, mb)
}

func mapDiff(prefix string, a, b map[string]any) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		sa, oka := a[k].(map[string]any)
		sb, okb := b[k].(map[string]any)
		if oka && okb {
			if d := mapDiff(prefix+k+".", sa, sb); d != "" {
				return d
			}
			continue
		}
		if string(mustJSON(a[k])) != string(mustJSON(b[k])) {
			return prefix + k
		}
	}
	return ""
}

// initFrom sets net's parameters from the WithInit model: all of them
// when the head fits (same task and class names), else all but the head,
// which keeps its fresh initialisation.
func (t *trainer) initFrom(net *model.Model[float32]) error {
	src, err := t.init.Model()
	if err != nil {
		return fmt.Errorf("WithInit: %w", err)
	}
	keep := src.Config.Task == net.Config.Task && src.Config.HeadOut() == net.Config.HeadOut() &&
		(net.Config.Task != "classify" || slices.Equal(t.init.Labels, t.labels))
	if !keep {
		if err := net.AdoptBody(src, net.Config.Train.Seed); err != nil {
			return fmt.Errorf("WithInit %s: %w", t.o.init, err)
		}
		return nil
	}
	for i, s := range net.Specs {
		w, sp, ok := src.Param(s.Name)
		if !ok || !slices.Equal(sp.Shape, s.Shape) {
			return fmt.Errorf("WithInit %s: parameter %s: missing or of another shape in that model", t.o.init, s.Name)
		}
		copy(net.ParamAt(i), w)
	}
	return nil
}
