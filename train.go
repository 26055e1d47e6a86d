package tokenmix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/train"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// Run is a finished (or cancelled) training run.
type Run struct {
	dir    string // "" when the run lived in a removed temporary directory
	cfg    Config
	net    *model.Model[float32]
	tok    *tokenizer.Tokenizer
	res    train.Result
	lastEv map[string]float64
}

// Dir is the run directory (WithOutDir), or "" when Train ran without one.
func (r *Run) Dir() string { return r.dir }

// Step is the run's step count: its updates, a pretraining stage's
// included.
func (r *Run) Step() int { return r.res.RunSteps() }

// Config is the run's resolved configuration, config.json as Config.JSON.
func (r *Run) Config() Config { return copyConfig(r.cfg) }

// Tokens is the tokens trained on (of the fine-tuning stage after a
// pretraining stage), across resumptions.
func (r *Run) Tokens() int64 { return r.res.Tokens }

// TrainTime is the time spent in training steps (of the fine-tuning
// stage after a pretraining stage), across resumptions.
func (r *Run) TrainTime() time.Duration {
	return time.Duration(r.res.TrainSeconds * float64(time.Second))
}

// PretrainSteps is the updates of a train.pretrain stage (0 without one).
func (r *Run) PretrainSteps() int { return r.res.PretrainSteps }

// Validation is the last validation's metrics ("val_loss" and
// "val_<metric>"), or nil when none ran (no WithValidation).
func (r *Run) Validation() map[string]float64 { return r.lastEv }

// Model returns the run's model ready for inference, with the weights of
// its last step, without reading the run directory: a copy, so that it
// stays as it is whatever else uses the run.
func (r *Run) Model() (*Model, error) {
	mc, err := model.ParseConfig(r.cfg.JSON)
	if err != nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	mc.Precision = "fp32"
	net, err := model.New[float32](mc)
	if err != nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	copy(net.Params, r.net.Params)
	o := options{threads: r.net.Threads, precision: "fp32"}
	return newModel(net, r.cfg.JSON, r.cfg.LabelNames, r.Step(), r.tok, o)
}

// Progress reports one update of Train (WithProgress).
type Progress struct {
	// Stage is "train", or "pretrain" during a train.pretrain stage.
	Stage string
	// Step is the stage's updates done, Steps those planned.
	Step, Steps int
	// Loss is the update's training loss, LR its learning rate, GradNorm
	// the gradient norm before clipping.
	Loss, LR, GradNorm float64
	// TokensPerSec is the stage's training throughput so far.
	TokensPerSec float64
	// Validation holds the metrics of a validation that ran after this
	// update ("val_loss", "val_<metric>"); nil at other updates.
	Validation map[string]float64
	// Mixer holds the mixers' statistics at a validation step (entmax's
	// α per head, keyed "blocks.{i}.{stat}"); nil otherwise or when no
	// mixer reports any.
	Mixer map[string]float64
	// Note, when not empty, makes this report a line of text rather than
	// an update: what Train is about to train on before the first update
	// ("412 parameters; 950 training and 50 validation inputs, 2 classes;
	// 300 steps"), or a step it passed over (WithSkipNonFinite).
	Note string
}

// WithOutDir makes dir the run directory (format 1, docs/model.md):
// config, metrics and checkpoints, which Load reads. A dir that already
// holds a run is resumed: Train continues from its newest checkpoint with
// its saved config (a non-zero cfg must resolve to the same config).
// Without it, Train works in a temporary directory that it removes before
// returning (Run.Dir is then ""). Train only.
func WithOutDir(dir string) Option {
	return func(o *options) error {
		if err := o.only("WithOutDir", "Train"); err != nil {
			return err
		}
		if dir == "" {
			return fmt.Errorf("tokenmix: WithOutDir: empty directory")
		}
		o.outDir = dir
		return nil
	}
}

// WithValidation validates on val every train.eval_every steps and at the
// end (train.eval_batches batches of it; all of it, in order, when fewer).
// val is read whole when Train starts. Train only.
func WithValidation(val Dataset) Option {
	return func(o *options) error {
		if err := o.only("WithValidation", "Train"); err != nil {
			return err
		}
		if val == nil {
			return fmt.Errorf("tokenmix: WithValidation: nil dataset")
		}
		o.val = val
		return nil
	}
}

// WithProgress calls f after every update, on Train's goroutine; a slow f
// slows training. Train only.
func WithProgress(f func(Progress)) Option {
	return func(o *options) error {
		if err := o.only("WithProgress", "Train"); err != nil {
			return err
		}
		o.progress = f
		return nil
	}
}

// WithInit starts training from the model in dir, a run directory (its
// newest checkpoint) or an exported model, to fine-tune it: the config's
// zero shape fields take that model's values, and every parameter starts
// from its weights. The head is kept when the task and the classes (their
// names, in order) are the same, and initialised afresh otherwise. A run
// resumed from a checkpoint ignores it. Train only.
func WithInit(dir string) Option {
	return func(o *options) error {
		if err := o.only("WithInit", "Train"); err != nil {
			return err
		}
		o.init = dir
		return nil
	}
}

// WithFreeze leaves the parameters whose names start with one of prefixes
// ("embed.", "blocks.0.") as they are: no update, no weight decay. It sets
// the config's train.freeze, so the run keeps it. A prefix that matches
// no parameter is an error. Train only.
func WithFreeze(prefixes ...string) Option {
	return func(o *options) error {
		if err := o.only("WithFreeze", "Train"); err != nil {
			return err
		}
		o.freeze = append(o.freeze, prefixes...)
		return nil
	}
}

// WithSkipNonFinite passes over up to n updates whose loss or gradient is
// NaN or infinite (each a metrics line) before Train stops on one (default
// 0). Train only.
func WithSkipNonFinite(n int) Option {
	return func(o *options) error {
		if err := o.only("WithSkipNonFinite", "Train"); err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("tokenmix: WithSkipNonFinite(%d): want n ≥ 0", n)
		}
		o.skipNonFinite = n
		return nil
	}
}

// streamPeek is how many examples of a stream Train reads before the
// first update, to infer what the config leaves out.
const streamPeek = 1024

// Train trains a model of cfg on the examples of data and returns the
// run. The loop is `tokenmix train`'s: batches of train.batch_size,
// AdamW on the warmup + cosine schedule, metrics lines and checkpoints in
// the run directory, which resume bit for bit. cfg's zero fields are
// inferred from data or defaulted (TrainConfig). Options:
//
//   - WithOutDir(dir): the run directory; one that holds a run resumes it.
//   - WithValidation(val): validation data, every train.eval_every steps.
//   - WithProgress(f): f gets every update's step, loss, learning rate,
//     tokens/s and validation.
//   - WithThreads(n): the threads training uses (results do not depend on it).
//   - WithInit(dir): fine-tune the model of a run or an export.
//   - WithFreeze(prefixes...): parameters left as they are.
//   - WithSkipNonFinite(n): updates with a NaN or infinite loss passed over.
//
// WithCheckpoint and WithPrecision are Load's, and an error here.
//
// Cancelling ctx stops Train after the current update: it saves a
// checkpoint and returns the run with ctx.Err(). Bad configs, bad data
// (an input longer than max_len, an id outside the vocabulary, a panicking
// or empty Dataset) and a freeze prefix that matches nothing are errors
// naming the problem; Train then returns a nil run, and the run directory
// keeps its last good checkpoint.
func Train(ctx context.Context, cfg TrainConfig, data Dataset, opts ...Option) (r *Run, err error) {
	o := options{fn: "Train", threads: defaultThreads(), step: -1}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if data == nil {
		return nil, fmt.Errorf("tokenmix: Train: nil dataset")
	}
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("tokenmix: Train: panic: %v (the run directory keeps its last checkpoint)", p)
		}
	}()
	t := &trainer{o: o, cfg: cfg}
	r, err = t.run(ctx, data)
	if err != nil && r == nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	return r, err
}

// trainer is one call of Train.
type trainer struct {
	o   options
	cfg TrainConfig

	out    string
	temp   bool
	mc     *model.Config
	labels []string
	tk     *tokenizer.Tokenizer
	train  *content // nil for a stream
	val    *content
	peek   []data.Record // a stream's first examples
	// summary says what the data is, for the first Progress note.
	summary string
	// spanLabels are a tagger's span labels (t.labels its BIO tags).
	spanLabels []string
	stream     Dataset
	pulled     int // examples taken from the stream
	init       *run.Stored
}

func (t *trainer) run(ctx context.Context, ds Dataset) (*Run, error) {
	t.out = t.o.outDir
	if t.out == "" {
		dir, err := os.MkdirTemp("", "tokenmix-train-")
		if err != nil {
			return nil, err
		}
		t.out, t.temp = dir, true
		defer os.RemoveAll(dir)
	}
	prev, openErr := run.Open(t.out)
	resuming := openErr == nil
	if !resuming {
		if _, err := os.Stat(filepath.Join(t.out, run.InfoName)); err == nil {
			return nil, openErr // a run directory this build cannot read
		}
	}
	var saved *model.Config
	seed := t.cfg.Train.Seed
	if resuming {
		var err error
		if saved, err = model.ParseConfig(prev.Config); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(t.out, run.ConfigName), err)
		}
		seed = saved.Train.Seed
	}
	if err := t.readData(ds, seed); err != nil {
		return nil, err
	}
	if t.o.init != "" && !resuming {
		st, err := run.Read(t.o.init, -1)
		if err != nil {
			return nil, fmt.Errorf("WithInit: %w", err)
		}
		t.init = st
	}
	if resuming {
		if err := t.resumeConfig(prev, saved); err != nil {
			return nil, err
		}
	} else if err := t.resolve(); err != nil {
		return nil, err
	}
	mc := t.mc
	tc := mc.Train
	net, err := model.New[float32](mc)
	if err != nil {
		return nil, err
	}
	if _, err := net.Frozen(tc.Freeze); err != nil {
		return nil, err
	}
	net.Threads = t.o.threads
	net.Init(tc.Seed)
	if t.init != nil {
		if err := t.initFrom(net); err != nil {
			return nil, err
		}
	}
	src, valTask, err := t.sources()
	if err != nil {
		return nil, err
	}
	d := prev
	cb, _ := json.MarshalIndent(mc, "", "  ")
	cb = append(cb, '\n')
	if !resuming {
		if t.tk != nil { // before run.json: a complete run has its tokenizer
			if err := run.WriteTokenizer(t.out, t.tk); err != nil {
				return nil, err
			}
		}
		if d, err = run.Create(t.out, cb, run.Info{Task: mc.Task, LabelNames: t.labels}); err != nil {
			return nil, err
		}
	}
	tr := model.NewTrainer(net)
	metric := data.Metric("")
	if valTask != nil {
		metric = valTask.Info().Metric
	}
	opts := train.Options{Steps: tc.Steps, Name: "train", SkipNonFinite: t.o.skipNonFinite,
		Extra: func() map[string]any {
			if s := net.MixerStats(); s != nil {
				return map[string]any{"mixer": s}
			}
			return nil
		}}
	if valTask != nil {
		opts.Eval = func() (map[string]any, error) {
			ev, err := data.Evaluate(train.Forward(net), valTask, data.Val, tc.BatchSize, tc.EvalBatches, 0)
			if err != nil {
				return nil, err
			}
			return map[string]any{"val_loss": ev.Loss, "val_" + string(metric): ev.Metric}, nil
		}
	}
	if f := t.o.progress; f != nil {
		f(Progress{Stage: run.StageTrain, Note: fmt.Sprintf("%d parameters; %s; %d steps", net.NumParams(), t.summary, tc.Steps)})
		opts.Progress = notes(f)
		opts.Report = func(r train.Report) {
			p := Progress{Stage: r.Stage, Step: r.Step, Steps: r.Planned, Loss: r.Loss, LR: r.LR,
				GradNorm: r.GradNorm, TokensPerSec: r.TokensPerSec}
			if r.Eval != nil {
				p.Validation, p.Mixer = floats(r.Eval), net.MixerStats()
			}
			f(p)
		}
	}
	res, err := train.Run(ctx, d, tr, src, opts)
	interrupted := errors.Is(err, train.ErrInterrupted)
	if err != nil && !interrupted {
		return nil, err
	}
	dir := t.out
	if t.temp {
		dir = ""
	}
	r := &Run{dir: dir, net: net, tok: t.tk, res: res, lastEv: floats(res.LastEval),
		cfg: configOf(mc, cb, t.labels, res.RunSteps())}
	if interrupted {
		return r, ctx.Err()
	}
	return r, nil
}

// notes passes a train.Progress's notes to f.
type notes func(Progress)

func (notes) Start(string, int, int)       {}
func (notes) SetTotal(int)                 {}
func (notes) Update(int, float64, float64) {}
func (notes) Finish()                      {}
func (f notes) Note(line string)           { f(Progress{Note: line}) }

// floats is m's float64 values.
func floats(m map[string]any) map[string]float64 {
	if m == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}

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
		for len(t.peek) < streamPeek {
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
		for _, r := range recs {
			for _, v := range r.Tokens {
				maxID = max(maxID, v)
			}
			minLen, maxLen = min(minLen, len(r.Tokens)), max(maxLen, len(r.Tokens))
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
			if (c.Task == "classify" || c.Task == "tag") && minLen != maxLen && c.PadID == nil {
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

// sources builds the training batches' source and the validation task
// (nil without validation data).
func (t *trainer) sources() (train.Source, data.Task, error) {
	mc := t.mc
	tc := mc.Train
	lim := data.Limits{Vocab: mc.VocabSize, MaxLen: mc.MaxLen, PadID: -1}
	if mc.PadID != nil && (mc.Task == "classify" || mc.Task == "tag") {
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
