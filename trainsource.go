package tokenmix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/train"
)

// sources builds the training batches' source and the validation task
// (nil without validation data).
func (t *trainer) sources() (train.Source, data.Task, error) {
	mc := t.mc
	tc := mc.Train
	lim := data.Limits{Vocab: mc.VocabSize, MaxLen: mc.MaxLen, PadID: -1}
	if mc.PadID != nil && mc.Task != "lm" {
		lim.PadID = *mc.PadID
	}
	tr := t.train
	var src train.Source
	var stage func(n, batch int) (train.Source, error)
	var val data.Task
	switch {
	case tr != nil && tr.task != nil:
		td := tr.task
		info := td.task.Info()
		if err := train.CheckTask(mc, info); err != nil {
			return nil, nil, fmt.Errorf("task %s: %w", info.Name, err)
		}
		src = train.TaskSource{L: data.NewLoader(td.task, data.Train, tc.BatchSize, true, tc.Seed, 0)}
		stage = func(n, batch int) (train.Source, error) {
			at, err := data.NewTaskAtLen(td.name, td.keys, n, "")
			if err != nil {
				return nil, err
			}
			return train.TaskSource{L: data.NewLoader(at, data.Train, batch, true, tc.Seed, 0)}, nil
		}
		if t.val != nil {
			if t.val.task != td || t.val.split != data.Val {
				return nil, nil, fmt.Errorf("validation data: a task validates on its own split (TaskData's val)")
			}
			val = td.task
		}
		t.summary = fmt.Sprintf("task %s, %d training and %d validation examples", info.Name, td.task.Len(data.Train), valLen(val))
	case tr != nil && tr.isText:
		if mc.Task != "lm" {
			return nil, nil, fmt.Errorf("config: task %q: text files train an lm", mc.Task)
		}
		text := data.TextOf(tr.text, t.tk)
		if text.Len() <= tc.SeqLen {
			return nil, nil, fmt.Errorf("training data: %d tokens of text, too few for a window of %d", text.Len(), tc.SeqLen+1)
		}
		ts, err := train.NewTextSource(text, tc.BatchSize, tc.SeqLen, tc.Seed)
		if err != nil {
			return nil, nil, err
		}
		src = ts
		stage = func(n, batch int) (train.Source, error) { return ts.WithLen(batch, n) }
		if t.val != nil {
			if !t.val.isText {
				return nil, nil, fmt.Errorf("validation data: text training data validates on text (TextFiles, or HoldOut of it)")
			}
			vt := data.TextOf(t.val.text, t.tk)
			if vt.Len() <= tc.SeqLen {
				return nil, nil, fmt.Errorf("validation data: %d tokens of text, too few for a window of %d", vt.Len(), tc.SeqLen+1)
			}
			if val, err = data.NewTextWindows(vt, tc.SeqLen, 0, t.tk); err != nil {
				return nil, nil, err
			}
		}
		unit, vn := "bytes", 0
		if t.tk != nil {
			unit = "tokens"
		}
		if t.val != nil {
			vn = data.TextOf(t.val.text, t.tk).Len()
		}
		t.summary = fmt.Sprintf("%d training and %d validation %s", text.Len(), vn, unit)
	default:
		var valRecs []data.Record
		if t.val != nil {
			if t.val.isText || t.val.task != nil {
				return nil, nil, fmt.Errorf("validation data: examples validate on examples")
			}
			valRecs = cloneRecs(t.val.recs)
			if err := t.prepare(valRecs, (*ChatTemplate)(mc.ChatTemplate)); err != nil {
				return nil, nil, fmt.Errorf("validation data: %w", err)
			}
			if err := checkMaskID(mc, valRecs); err != nil {
				return nil, nil, fmt.Errorf("validation data: %w", err)
			}
		}
		if tr == nil && mc.Task == "embed" {
			return nil, nil, fmt.Errorf("training data: an embedder trains on a whole dataset of pairs (Examples, JSONLFile), not a stream")
		}
		if tr == nil { // a stream
			s := &streamSource{t: t, lim: lim, buf: cloneRecs(t.peek)}
			if err := t.prepare(s.buf, (*ChatTemplate)(mc.ChatTemplate)); err != nil {
				return nil, nil, fmt.Errorf("training data: %w", err)
			}
			if err := checkMaskID(mc, s.buf); err != nil {
				return nil, nil, fmt.Errorf("training data: %w", err)
			}
			src = s
			if valRecs != nil {
				task, err := s.task(nil, valRecs)
				if err != nil {
					return nil, nil, fmt.Errorf("validation data: %w", err)
				}
				val = task
			}
			t.summary = fmt.Sprintf("a stream of training examples and %d validation examples", valLen(val))
			break
		}
		recs := cloneRecs(tr.recs)
		if err := t.prepare(recs, (*ChatTemplate)(mc.ChatTemplate)); err != nil {
			return nil, nil, fmt.Errorf("training data: %w", err)
		}
		if mc.Task == "embed" {
			ps, err := newPairSource(recs, lim, tc.BatchSize, tc.Seed)
			if err != nil {
				return nil, nil, fmt.Errorf("training data: %w", err)
			}
			src = ps
			if valRecs != nil {
				if t.pairVal, err = newPairSource(valRecs, lim, tc.BatchSize, 0); err != nil {
					return nil, nil, fmt.Errorf("validation data: %w", err)
				}
			}
			t.summary = fmt.Sprintf("%d training and %d validation pairs", len(recs), len(valRecs))
			break
		}
		if err := checkMaskID(mc, recs); err != nil {
			return nil, nil, fmt.Errorf("training data: %w", err)
		}
		if valRecs == nil {
			valRecs = []data.Record{} // no hold-out
		}
		task, err := newRecordTask(mc, t.labels, lim, recs, valRecs)
		if err != nil {
			return nil, nil, fmt.Errorf("training data: %w", err)
		}
		src = train.TaskSource{L: data.NewLoader(task, data.Train, tc.BatchSize, true, tc.Seed, 0)}
		if len(valRecs) > 0 {
			val = task
		}
		switch mc.Task {
		case "classify":
			t.summary = fmt.Sprintf("%d training and %d validation inputs, %d classes", len(recs), len(valRecs), len(t.labels))
		case "tag":
			t.summary = fmt.Sprintf("%d training and %d validation inputs, %d labels (%d BIO tags)", len(recs), len(valRecs), len(t.spanLabels), len(t.labels))
		default:
			t.summary = fmt.Sprintf("%d training and %d validation sequences, metric %s", len(recs), len(valRecs), task.Info().Metric)
		}
	}
	if len(tc.Curriculum) > 0 && stage == nil {
		return nil, nil, fmt.Errorf("config: train.curriculum needs data that has shorter forms: text, or a task whose length can be set; examples have their own lengths")
	}
	src, err := train.NewCurriculum(tc, src, stage)
	if err != nil {
		return nil, nil, err
	}
	return src, val, nil
}

// valLen is the size of val's validation split, 0 without val.
func valLen(val data.Task) int {
	if val == nil {
		return 0
	}
	return val.Len(data.Val)
}

// prepare turns recs into the model's ids: text through the tokenizer,
// conversations rendered with tmpl (nil: the default), and for a tagger
// (t.spanLabels set) spans and tags into BIO targets, a text without
// spans all O.
func (t *trainer) prepare(recs []data.Record, tmpl *ChatTemplate) error {
	if t.spanLabels != nil {
		for i := range recs {
			if r := &recs[i]; r.Spans == nil && r.Tags == nil && r.Messages == nil {
				if r.Text {
					r.Spans = []data.Span{}
				} else {
					r.Tags = slices.Repeat([]string{"O"}, len(r.Tokens))
				}
			}
		}
		if err := data.TagTargets(recs, t.spanLabels, data.Offsets(t.tk)); err != nil {
			return err
		}
	}
	data.Retokenize(recs, t.tk)
	ct := chat.Default
	if tmpl != nil {
		ct = chat.Template(*tmpl)
	}
	return data.RenderChat(recs, ct, data.Encoder(t.tk))
}

func cloneRecs(recs []data.Record) []data.Record {
	out := slices.Clone(recs)
	for i := range out {
		out[i].Tokens = slices.Clone(out[i].Tokens)
	}
	return out
}

// newRecordTask is the task of training and validation records: a
// classifier's labelled inputs, or an lm's sequences.
func newRecordTask(mc *model.Config, labels []string, lim data.Limits, recs, val []data.Record) (*data.Labeled, error) {
	switch mc.Task {
	case "classify":
		return data.NewLabeled(recs, val, labels, lim, 0, 0)
	case "tag":
		return data.NewTagged(recs, val, labels, lim, 0, 0)
	}
	return data.NewSequences(recs, val, lim, 0, 0)
}

// checkMaskID returns an error naming the first record that uses the mlm
// mask token (train.pretrain.mask_id), which the data must not use.
func checkMaskID(mc *model.Config, recs []data.Record) error {
	pc := train.PretrainMLM(mc)
	if pc == nil {
		return nil
	}
	for _, r := range recs {
		if slices.Contains(r.Tokens, int32(pc.MaskID)) {
			return fmt.Errorf("%s: uses token %d, the config's train.pretrain.mask_id (the mask token must not occur in the data)", r.Where, pc.MaskID)
		}
	}
	return nil
}

// streamSource is the Source of a stream: batch_size examples at a time,
// in order, the peeked ones first. It has no state to save: a resumed
// run goes on from where the stream stands.
type streamSource struct {
	t   *trainer
	lim data.Limits
	buf []data.Record
	b   []data.Record
}

func (s *streamSource) task(recs, val []data.Record) (*data.Labeled, error) {
	if val == nil {
		val = []data.Record{}
	}
	return newRecordTask(s.t.mc, s.t.labels, s.lim, recs, val)
}

func (s *streamSource) Next(b *data.Batch) error {
	n := s.t.mc.Train.BatchSize
	s.b = s.b[:0]
	for len(s.b) < n {
		if len(s.buf) > 0 {
			s.b, s.buf = append(s.b, s.buf[0]), s.buf[1:]
			continue
		}
		e, err := pull(s.t.stream)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("stream example %d: %w", s.t.pulled, err)
		}
		r, err := record(e, fmt.Sprintf("stream example %d", s.t.pulled))
		if err != nil {
			return err
		}
		s.t.pulled++
		recs := []data.Record{r}
		if err := s.t.prepare(recs, (*ChatTemplate)(s.t.mc.ChatTemplate)); err != nil {
			return err
		}
		if err := checkMaskID(s.t.mc, recs); err != nil {
			return err
		}
		s.b = append(s.b, recs[0])
	}
	if len(s.b) == 0 {
		return io.EOF
	}
	task, err := s.task(s.b, nil)
	if err != nil {
		return err
	}
	idx := make([]int, len(s.b))
	for i := range idx {
		idx[i] = i
	}
	data.Fill(b, task, data.Train, idx, 0)
	return nil
}

func (s *streamSource) State() (json.RawMessage, error) { return nil, nil }

func (s *streamSource) Restore(int, json.RawMessage) error { return nil }

// pairSource is the Source of an embedder's pairs: batch_size pairs a
// step, drawn in a seeded permutation per epoch (so the step alone sets
// the position), as rows: the texts, then their positives, then, when
// every pair has one, their negatives; each text's target is its
// positive's row, the other rows' −1.
type pairSource struct {
	recs  []data.Record
	B     int
	seed  uint64
	pad   int32
	neg   bool
	step  int
	epoch int
	perm  []int
}

func newPairSource(recs []data.Record, lim data.Limits, B int, seed uint64) (*pairSource, error) {
	if len(recs) < 2 {
		return nil, fmt.Errorf("%d pairs: an embedder needs at least 2 (each is the others' negative)", len(recs))
	}
	s := &pairSource{recs: recs, B: min(B, len(recs)), seed: seed, pad: int32(max(lim.PadID, 0)), neg: true, epoch: -1}
	for _, r := range recs {
		if r.Positive == nil {
			return nil, fmt.Errorf("%s: no \"positive\" (an embedder trains on pairs)", r.Where)
		}
		s.neg = s.neg && r.Negative != nil
		for _, seq := range [][]int32{r.Tokens, r.Positive, r.Negative} {
			if seq == nil {
				continue
			}
			if err := lim.Check(data.Record{Tokens: seq, Text: r.Text, Where: r.Where}); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// pairs fills b with the rows of pairs idx.
func (s *pairSource) fill(b *data.Batch, idx []int) {
	var rows [][]int32
	for _, i := range idx {
		rows = append(rows, s.recs[i].Tokens)
	}
	for _, i := range idx {
		rows = append(rows, s.recs[i].Positive)
	}
	if s.neg {
		for _, i := range idx {
			rows = append(rows, s.recs[i].Negative)
		}
	}
	T := 0
	for _, r := range rows {
		T = max(T, len(r))
	}
	n := len(idx)
	b.B, b.T = len(rows), T
	b.Tokens = slices.Grow(b.Tokens[:0], len(rows)*T)[:len(rows)*T]
	b.Targets = slices.Grow(b.Targets[:0], len(rows))[:len(rows)]
	b.Lens = b.Lens[:0]
	b.Index = append(b.Index[:0], idx...)
	for r, row := range rows {
		dst := b.Tokens[r*T : (r+1)*T]
		copy(dst, row)
		for j := len(row); j < T; j++ {
			dst[j] = s.pad
		}
		b.Lens = append(b.Lens, len(row))
		b.Targets[r] = -1
		if r < n {
			b.Targets[r] = int32(r + n)
		}
	}
}

func (s *pairSource) Next(b *data.Batch) error {
	n := len(s.recs)
	idx := make([]int, s.B)
	for k := range idx {
		g := s.step*s.B + k
		if e := g / n; e != s.epoch {
			s.epoch, s.perm = e, rand.New(rand.NewPCG(s.seed, uint64(e))).Perm(n)
		}
		idx[k] = s.perm[g%n]
	}
	s.fill(b, idx)
	s.step++
	return nil
}

func (s *pairSource) State() (json.RawMessage, error) { return nil, nil }

func (s *pairSource) Restore(step int, _ json.RawMessage) error {
	s.step = step
	return nil
}

// embedScores embeds every pair's text and positive with fwd, in batches
// of the source's size, L2-normalised, and scores retrieval in groups of
// group pairs (data.RetrievalScores).
func embedScores(fwd data.Forward, s *pairSource, D, group int) (recall1, mrr float64, err error) {
	n := len(s.recs)
	texts, positives := make([][]float32, n), make([][]float32, n)
	for lo := 0; lo < n; lo += s.B {
		idx := make([]int, 0, s.B)
		for i := lo; i < min(lo+s.B, n); i++ {
			idx = append(idx, i)
		}
		var b data.Batch
		neg := s.neg
		s.neg = false
		s.fill(&b, idx)
		s.neg = neg
		for i := range b.Targets {
			b.Targets[i] = -1 // embeddings only
		}
		z, err := fwd(&b)
		if err != nil {
			return 0, 0, err
		}
		for r := range len(idx) * 2 {
			e := make([]float32, D)
			var norm float64
			for k := range D {
				norm += float64(z[r*D+k]) * float64(z[r*D+k])
			}
			norm = math.Sqrt(norm) + 1e-12
			for k := range e {
				e[k] = float32(float64(z[r*D+k]) / norm)
			}
			if r < len(idx) {
				texts[idx[r]] = e
			} else {
				positives[idx[r-len(idx)]] = e
			}
		}
	}
	r1, m := data.RetrievalScores(texts, positives, group)
	return r1, m, nil
}
