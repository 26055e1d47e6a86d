package tokenmix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/internal/data"
)

// Example is one example of a Dataset: an input, as Text (which the
// model reads through its tokenizer, or as bytes) or as Tokens (ids),
// exactly one of them, and for a classifier its Label; for a tagger,
// Text and its Spans (byte offsets; Score is ignored), an empty Spans for
// a text with none; or, for a chat lm, a conversation (Messages) alone,
// whose assistant turns training scores (docs/training.md).
type Example struct {
	Text     string
	Tokens   []int32
	Label    string
	Spans    []Span
	Messages []Message
	// Positive, for an embedder, is a text that belongs with Text (its
	// answer, its doc comment, a paraphrase), Negative optionally one that
	// does not: training pulls Text's embedding towards Positive's and
	// away from the batch's other texts (task "embed").
	Positive, Negative string
}

// Message is one turn of a conversation: its role ("system", "user",
// "assistant", or another) and its content.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Dataset yields examples one at a time: Next returns the next one, and
// io.EOF after the last. Train batches them.
//
// The datasets of Examples, JSONLFile, TextFiles, HoldOut and TaskData are
// read whole when Train starts; Train shuffles them by the config's seed,
// and a resumed run continues byte-identically. Any other Dataset (FromSeq,
// or a type of the caller's) is a stream: Train takes its examples in
// order, batch_size at a time, and stops early, with a checkpoint, when
// it ends. A stream cannot be rewound, so a resumed run takes the
// stream's examples from where the stream stands, not the ones the
// interrupted run would have taken next.
type Dataset interface {
	Next() (Example, error)
}

// whole is a Dataset that Train reads at once (load) rather than as a
// stream. seed is the training seed, which HoldOut's split uses.
type whole interface {
	Dataset
	load(seed uint64) (*content, error)
}

// content is a whole dataset: records, or text, or a task's split.
type content struct {
	name string // the file, for messages; "" for examples in memory
	recs []data.Record
	// labels are the class names of the records of HoldOut's dataset
	// before the split (nil: those of recs).
	labels []string
	text   []byte
	isText bool
	task   *taskData
	split  data.Split
}

// walker serves Next over a loaded content, for callers that read a
// whole dataset themselves.
type walker struct {
	once sync.Once
	c    *content
	err  error
	pos  int
}

func (w *walker) next(load func() (*content, error)) (Example, error) {
	w.once.Do(func() { w.c, w.err = load() })
	if w.err != nil {
		return Example{}, w.err
	}
	c := w.c
	switch {
	case c.isText:
		if w.pos > 0 {
			return Example{}, io.EOF
		}
		w.pos++
		return Example{Text: string(c.text)}, nil
	case c.task != nil:
		t := c.task.task
		if w.pos >= t.Len(c.split) {
			return Example{}, io.EOF
		}
		n := t.ExampleLen(c.split, w.pos)
		info := t.Info()
		toks, tg := make([]int32, n), make([]int32, n)
		t.Example(toks, tg, c.split, w.pos)
		w.pos++
		e := Example{Tokens: toks}
		if info.Mode == data.Classify {
			e.Label = fmt.Sprint(tg[0])
			if int(tg[0]) < len(info.LabelNames) {
				e.Label = info.LabelNames[tg[0]]
			}
		}
		return e, nil
	}
	if w.pos >= len(c.recs) {
		return Example{}, io.EOF
	}
	r := c.recs[w.pos]
	w.pos++
	e := Example{Label: r.Label, Positive: idText(r.Positive), Negative: idText(r.Negative)}
	for _, s := range r.Spans {
		e.Spans = append(e.Spans, Span{Start: s.Start, End: s.End, Label: s.Label})
	}
	if r.Spans != nil && e.Spans == nil {
		e.Spans = []Span{}
	}
	if r.Messages != nil {
		for _, m := range r.Messages {
			e.Messages = append(e.Messages, Message(m))
		}
		return e, nil
	}
	if r.Text {
		b := make([]byte, len(r.Tokens))
		for i, t := range r.Tokens {
			b[i] = byte(t)
		}
		e.Text = string(b)
	} else {
		e.Tokens = append([]int32(nil), r.Tokens...)
	}
	return e, nil
}

// idText is the bytes of ids as a string.
func idText(ids []int32) string {
	b := make([]byte, len(ids))
	for i, t := range ids {
		b[i] = byte(t)
	}
	return string(b)
}

// record is e as a data record; where names it in messages.
func record(e Example, where string) (data.Record, error) {
	r := data.Record{Label: e.Label, Where: where}
	if e.Messages != nil {
		if e.Text != "" || e.Tokens != nil || e.Label != "" {
			return r, fmt.Errorf("%s: Messages with Text, Tokens or Label: a conversation is its messages alone", where)
		}
		r.Messages = chatMessages(e.Messages)
		if err := chat.CheckMessages(r.Messages); err != nil {
			return r, fmt.Errorf("%s: %w", where, err)
		}
		return r, nil
	}
	if e.Positive != "" || e.Negative != "" {
		if e.Text == "" || e.Positive == "" || e.Label != "" || e.Spans != nil {
			return r, fmt.Errorf("%s: an embedding pair is Text and Positive (and optionally Negative), without Label or Spans", where)
		}
		r.Positive = []int32(textIDs(e.Positive))
		if e.Negative != "" {
			r.Negative = textIDs(e.Negative)
		}
	}
	if e.Spans != nil {
		if e.Text == "" || e.Label != "" {
			return r, fmt.Errorf("%s: Spans need Text (byte offsets into it) and no Label", where)
		}
		r.Spans = make([]data.Span, len(e.Spans))
		for i, s := range e.Spans {
			r.Spans[i] = data.Span{Start: s.Start, End: s.End, Label: s.Label}
		}
		if err := data.CheckSpans(r.Spans, len(e.Text)); err != nil {
			return r, fmt.Errorf("%s: %w", where, err)
		}
	}
	switch {
	case e.Text != "" && e.Tokens != nil:
		return r, fmt.Errorf("%s: both Text and Tokens: want one of them", where)
	case e.Text != "":
		r.Tokens, r.Text = make([]int32, len(e.Text)), true
		for i := 0; i < len(e.Text); i++ {
			r.Tokens[i] = int32(e.Text[i])
		}
	case len(e.Tokens) > 0:
		r.Tokens = append([]int32(nil), e.Tokens...)
	default:
		return r, fmt.Errorf("%s: empty input: want Text or Tokens", where)
	}
	return r, nil
}

// textIDs is the bytes of s as ids.
func textIDs(s string) []int32 {
	out := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int32(s[i])
	}
	return out
}

// chatMessages is msgs as package chat's.
func chatMessages(msgs []Message) []chat.Message {
	out := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		out[i] = chat.Message(m)
	}
	return out
}

// Examples is the dataset of ex, in memory. Train reads the slice when it
// starts; changing it later changes nothing.
func Examples(ex []Example) Dataset { return &examples{ex: ex} }

type examples struct {
	ex []Example
	w  walker
}

func (d *examples) Next() (Example, error) {
	return d.w.next(func() (*content, error) { return d.load(0) })
}

func (d *examples) load(uint64) (*content, error) {
	if len(d.ex) == 0 {
		return nil, fmt.Errorf("no examples")
	}
	c := &content{recs: make([]data.Record, len(d.ex))}
	for i, e := range d.ex {
		r, err := record(e, fmt.Sprintf("examples[%d]", i))
		if err != nil {
			return nil, err
		}
		c.recs[i] = r
	}
	return c, nil
}

// JSONLFile is the dataset of the JSONL file at path, one example a line:
// {"text": …} or {"tokens": […]}, with "label" for a classifier and, for
// an lm, optional "targets" (one per token, −1 for none), as `tokenmix
// train --data` reads it. An unreadable file or a malformed line is an
// error of Train (and of Next) naming the file and the line.
func JSONLFile(path string) Dataset { return &jsonlFile{path: path} }

type jsonlFile struct {
	path string
	w    walker
}

func (d *jsonlFile) Next() (Example, error) {
	return d.w.next(func() (*content, error) { return d.load(0) })
}

func (d *jsonlFile) load(uint64) (*content, error) {
	recs, err := data.ReadRecords(d.path, false, false)
	if err != nil {
		return nil, err
	}
	return &content{name: d.path, recs: recs}, nil
}

// TextFiles is the text of the file at path, or of every regular file
// under the directory path in path order (each followed by a newline),
// for an lm: Train draws random windows of train.seq_len tokens from it.
// Next yields the whole text as one example.
func TextFiles(path string) Dataset { return &textFiles{path: path} }

type textFiles struct {
	path string
	w    walker
}

func (d *textFiles) Next() (Example, error) {
	return d.w.next(func() (*content, error) { return d.load(0) })
}

func (d *textFiles) load(uint64) (*content, error) {
	b, err := data.ReadText(d.path)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: no text", d.path)
	}
	return &content{text: b, isText: true}, nil
}

// FromSeq is the stream of examples seq yields, for data that arrives
// while training runs (a channel, a queue, a database cursor). Train takes
// batch_size examples per update and stops, saving, when seq ends. A
// panic in seq is an error of Train naming it.
func FromSeq(seq iter.Seq[Example]) Dataset { return &stream{seq: seq} }

type stream struct {
	seq  iter.Seq[Example]
	once sync.Once
	next func() (Example, bool)
	done bool
}

func (s *stream) Next() (Example, error) {
	s.once.Do(func() { s.next, _ = iter.Pull(s.seq) })
	if s.done {
		return Example{}, io.EOF
	}
	e, ok := s.next()
	if !ok {
		s.done = true
		return Example{}, io.EOF
	}
	return e, nil
}

// HoldOut splits d, a dataset Train reads whole, into training and
// validation parts: for text, the last frac of its bytes; for examples,
// frac of them (at least one), drawn by the training seed. Pass val with
// WithValidation. A stream or a task (TaskData has its own split) is an
// error of Train.
func HoldOut(d Dataset, frac float64) (train, val Dataset) {
	h := &holdOut{d: d, frac: frac}
	return &heldPart{h: h}, &heldPart{h: h, val: true}
}

type holdOut struct {
	d    Dataset
	frac float64

	mu     sync.Mutex
	seed   uint64
	loaded bool
	parts  [2]*content
	err    error
}

func (h *holdOut) split(seed uint64) ([2]*content, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loaded && h.seed == seed {
		return h.parts, h.err
	}
	h.loaded, h.seed = true, seed
	h.parts, h.err = h.load(seed)
	return h.parts, h.err
}

func (h *holdOut) load(seed uint64) ([2]*content, error) {
	var parts [2]*content
	if !(h.frac > 0 && h.frac < 1) {
		return parts, fmt.Errorf("HoldOut: fraction %v not in (0, 1)", h.frac)
	}
	w, ok := h.d.(whole)
	if !ok {
		return parts, fmt.Errorf("HoldOut: a stream cannot be split; give the validation examples with WithValidation")
	}
	c, err := w.load(seed)
	switch {
	case err != nil:
		return parts, err
	case c.task != nil:
		return parts, fmt.Errorf("HoldOut: a task has its own validation split (TaskData)")
	case c.isText:
		tc, err := data.SplitText(c.text, h.frac)
		if err != nil {
			return parts, err
		}
		return [2]*content{{text: tc.Train, isText: true}, {text: tc.Val, isText: true}}, nil
	}
	tr, val, err := data.HoldOut(c.recs, nil, h.frac, seed)
	if err != nil {
		return parts, err
	}
	names := data.LabelNames(c.recs)
	return [2]*content{{name: c.name, recs: tr, labels: names}, {name: c.name, recs: val, labels: names}}, nil
}

type heldPart struct {
	h   *holdOut
	val bool
	w   walker
}

func (p *heldPart) Next() (Example, error) {
	return p.w.next(func() (*content, error) { return p.load(0) })
}

func (p *heldPart) load(seed uint64) (*content, error) {
	parts, err := p.h.split(seed)
	if err != nil {
		return nil, err
	}
	if p.val {
		return parts[1], nil
	}
	return parts[0], nil
}

// TaskData returns the training and validation splits of a task of the
// task list (docs/presets.md lists them): spec is its name, or
// its JSON object {"name": …, other keys}. The task's labels are its
// classes' names, and a length curriculum (train.curriculum) builds the
// task at each stage's length.
func TaskData(spec string) (train, val Dataset, err error) {
	name, keys, err := data.ParseTaskArg(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenmix: TaskData: %w", err)
	}
	t, err := data.NewTask(name, keys, "")
	if err != nil {
		return nil, nil, fmt.Errorf("tokenmix: TaskData: %w", err)
	}
	td := &taskData{name: name, keys: keys, task: t}
	return &taskPart{td: td, split: data.Train}, &taskPart{td: td, split: data.Val}, nil
}

// taskData is a task of the task list, with what builds it again at
// another length.
type taskData struct {
	name string
	keys map[string]json.RawMessage
	task data.Task
}

type taskPart struct {
	td    *taskData
	split data.Split
	w     walker
}

func (p *taskPart) Next() (Example, error) {
	return p.w.next(func() (*content, error) { return p.load(0) })
}

func (p *taskPart) load(uint64) (*content, error) {
	return &content{task: p.td, split: p.split}, nil
}

// errStreamPanic marks a panic in a stream's Next.
var errStreamPanic = errors.New("the dataset panicked")

// pull is d.Next with a panic turned into an error.
func pull(d Dataset) (e Example, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errStreamPanic, p)
		}
	}()
	return d.Next()
}
