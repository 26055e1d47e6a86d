package tokenmix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// WithContinueOnSaveError goes on training when a checkpoint cannot be
// written (a full disk, an I/O error): the failure is a metrics line
// ("save_error") and a Progress note, and the next checkpoint tries again.
// Without it, Train stops there with an error naming the checkpoint's
// path, the free space and the newest checkpoint, which stays the one
// before. The last checkpoint, at the end or on cancellation, must be
// written either way. Train only.
func WithContinueOnSaveError() Option {
	return func(o *options) error {
		if err := o.only("WithContinueOnSaveError", "Train"); err != nil {
			return err
		}
		o.saveGoesOn = true
		return nil
	}
}

// embedGroup is how many pairs an embedder's retrieval is scored among:
// each text's positive against the group's other positives.
const embedGroup = 32

// streamPeek is how many examples of a stream Train reads before the
// first update, to infer what the config leaves out (one when the config
// sets task, vocab_size, max_len and, for a classifier or a tagger,
// Labels).
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
//   - WithMaxMemory(n): the memory budget the run's plan must fit
//     (default DefaultMaxMemory); a run over it is refused before it
//     allocates.
//   - WithContinueOnSaveError(): a checkpoint that cannot be written does
//     not stop the run; the next one tries again.
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
	o := options{fn: "Train", threads: defaultThreads(), step: -1, maxMemory: -1}
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
	// pairVal is an embedder's validation pairs (nil without).
	pairVal *pairSource
	stream  Dataset
	pulled  int // examples taken from the stream
	init    *run.Stored
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
	if err := model.CheckTrainBudget(mc, t.o.threads, t.o.budget()); err != nil {
		return nil, err
	}
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
		ContinueOnSaveError: t.o.saveGoesOn,
		Extra: func() map[string]any {
			if s := net.MixerStats(); s != nil {
				return map[string]any{"mixer": s}
			}
			return nil
		}}
	if t.pairVal != nil {
		opts.Eval = func() (map[string]any, error) {
			r1, mrr, err := embedScores(train.Forward(net), t.pairVal, mc.DModel, embedGroup)
			if err != nil {
				return nil, err
			}
			return map[string]any{"val_recall_at_1": r1, "val_mrr": mrr}, nil
		}
	}
	if valTask != nil {
		opts.Eval = func() (map[string]any, error) {
			ev, err := train.Evaluate(net, valTask, data.Val, tc.BatchSize, tc.SeqLen, tc.EvalBatches, 0)
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
