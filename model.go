package tokenmix

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// Model is a trained model loaded for inference. A Model is safe for
// concurrent use by many goroutines: its weights are loaded once and read
// only, and its calls share its threads (see Load).
type Model struct {
	cfg     Config
	threads int
	net     *model.Model[float32] // weights plus the one workspace
	passes  chan struct{}         // cap 1: the one pass the workspace holds
	tok     *tokenizer.Tokenizer  // nil: text is bytes
	// budget is WithMaxMemory's bytes (0: none); ws the workspace's bytes
	// after the last pass.
	budget int64
	ws     atomic.Int64
}

// Config is a model's resolved configuration (config.json), as Model.Config
// returns it.
type Config struct {
	VocabSize, DModel, NHeads, NLayers, DFF, MaxLen int
	Causal                                          bool
	// Task is "lm" (a next-token model) or "classify".
	Task string
	// NClasses is the number of classes of a classifier (0 for lm).
	NClasses int
	// PadID is the padding token, or nil.
	PadID *int
	// Mixer is the token mixer's kind ("full", "fnet", …).
	Mixer string
	// Precision is the precision inference runs in, "fp32" or "bf16"
	// (WithPrecision).
	Precision string
	// LabelNames names a classifier's classes in index order; nil when the
	// run has no names (Prediction.Name is then the index in decimal).
	LabelNames []string
	// Step is the training step of the loaded checkpoint (0 when unknown).
	Step int
	// SeqLen is the training window (train.seq_len), 0 when the config has
	// no train object: positions beyond it were never trained.
	SeqLen int
	// JSON is config.json as stored with the model.
	JSON json.RawMessage
}

// Option configures Load or Train. Each option says which it applies to;
// given to the other, it is an error naming it.
type Option func(*options) error

type options struct {
	fn string // "Load" or "Train"

	threads   int
	step      int
	precision string

	outDir        string
	val           Dataset
	progress      func(Progress)
	init          string
	freeze        []string
	skipNonFinite int
	maxMemory     int64 // WithMaxMemory; -1: not given
	saveGoesOn    bool  // WithContinueOnSaveError
}

// budget is the memory budget: WithMaxMemory's, else DefaultMaxMemory.
func (o options) budget() int64 {
	if o.maxMemory < 0 {
		return DefaultMaxMemory()
	}
	return o.maxMemory
}

// only returns an error unless the options are fn's.
func (o *options) only(name, fn string) error {
	if o.fn != fn {
		return fmt.Errorf("tokenmix: %s applies to %s, not to %s", name, fn, o.fn)
	}
	return nil
}

// defaultThreads is the threads a model uses without WithThreads.
func defaultThreads() int { return parallel.Threads() }

// WithThreads sets the number of threads the model's calls (Load) or
// training (Train) use (default: GOMAXPROCS, or TOKENMIX_THREADS when
// set). Results do not depend on it: every call gives bitwise the same
// outputs on any number of threads. n < 1 is an error.
func WithThreads(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("tokenmix: WithThreads(%d): want at least 1", n)
		}
		o.threads = n
		return nil
	}
}

// WithMaxMemory sets a memory budget of n bytes (0: none), checked
// against the memory plan before anything is allocated.
//
// Train refuses a config whose training needs more (activations, their
// gradients and scratch at the largest batch shape, parameters with their
// gradients and AdamW moments, and a checkpoint save's buffers), with an
// error naming the largest planned tensors and what would fit: a batch
// size, a length, or checkpoint or reversible blocks.
//
// Load refuses weights larger than n; the model's calls then split their
// inputs into passes whose planned workspace (PassBytes) fits beside the
// weights, refuse an input that alone does not, and each stream stops
// once its state holds more than the rest (StreamOptions.CacheBytes).
//
// The default of both is DefaultMaxMemory, read when they start.
func WithMaxMemory(n int64) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("tokenmix: WithMaxMemory(%d): want n ≥ 0 (0: no budget)", n)
		}
		o.maxMemory = n
		return nil
	}
}

// DefaultMaxMemory is the memory budget of Train and Load without
// WithMaxMemory: nine tenths of the memory the kernel reports available
// (MemAvailable), or 0 (no budget) where it reports none.
func DefaultMaxMemory() int64 {
	n, err := memstat.AvailableMemory()
	if err != nil || n <= 0 {
		return 0
	}
	return n / 10 * 9
}

// WithCheckpoint loads the checkpoint of a run at step instead of the
// newest. Load returns an error when the run has no such checkpoint or dir
// is an exported model. Load only.
func WithCheckpoint(step int) Option {
	return func(o *options) error {
		if err := o.only("WithCheckpoint", "Load"); err != nil {
			return err
		}
		if step < 0 {
			return fmt.Errorf("tokenmix: WithCheckpoint(%d): want a step ≥ 0", step)
		}
		o.step = step
		return nil
	}
}

// WithPrecision sets the precision inference runs in: "fp32" (the default)
// or "bf16", in which the matrix products of the feed-forwards, the head
// and the mixers' projections multiply bf16 values (the weights rounded
// once at Load, the activations as they enter each product) and accumulate
// in float32; everything else stays in float32. bf16 runs on the AMX or
// AVX512-BF16 kernels where the CPU has them (AMX first), else on a
// slower pure-Go path. Load returns an error for another value. Load
// only (a training run's precision is its config's).
func WithPrecision(p string) Option {
	return func(o *options) error {
		if err := o.only("WithPrecision", "Load"); err != nil {
			return err
		}
		switch p {
		case "fp32", "bf16":
			o.precision = p
			return nil
		}
		return fmt.Errorf("tokenmix: WithPrecision(%q): want \"fp32\" or \"bf16\"", p)
	}
}

// Load loads the model in dir: a run directory (its newest complete
// checkpoint, or WithCheckpoint's) as `tokenmix train` and the arena write
// it, or a model directory written by `tokenmix export` (config.json and
// weights.safetensors).
//
// Calls on the loaded model run one at a time (the model has one
// workspace), each on the model's threads; concurrent calls wait their
// turn (a cancelled context ends the wait). Calls on different models run
// at the same time, each on its own threads, with the results each would
// give alone. A model whose mixer draws random numbers (LSH's
// rotations) draws them from the run's seed and the checkpoint's step, so
// a loaded model is deterministic.
func Load(dir string, opts ...Option) (*Model, error) {
	o := options{fn: "Load", threads: defaultThreads(), step: -1, precision: "fp32", maxMemory: -1}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	st, err := run.Read(dir, o.step)
	if err != nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	o.maxMemory = o.budget()
	if o.maxMemory > 0 {
		if err := checkWeights(st.Config, o); err != nil {
			return nil, err
		}
	}
	net, err := st.Model()
	if err != nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	return newModel(net, st.Config, st.Labels, st.Step, st.Tokenizer, o)
}

// newModel wraps net, an fp32 model with its weights, for inference.
func newModel(net *model.Model[float32], configJSON []byte, labels []string, step int, tok *tokenizer.Tokenizer, o options) (*Model, error) {
	net.Threads = o.threads
	m := &Model{threads: o.threads, net: net, passes: make(chan struct{}, 1), tok: tok,
		cfg: configOf(net.Config, configJSON, labels, step)}
	if tc := net.Config.Train; tc != nil {
		net.Seed = tc.Seed
	}
	net.Step = step
	m.cfg.Precision = o.precision
	m.budget = max(o.maxMemory, 0)
	if o.precision == "bf16" {
		if err := net.UseBF16(); err != nil {
			return nil, fmt.Errorf("tokenmix: %w", err)
		}
	}
	return m, nil
}

// configOf is the Config of mc, config.json configJSON, with the class
// names and the step of its weights.
func configOf(mc *model.Config, configJSON []byte, labels []string, step int) Config {
	c := Config{
		VocabSize: mc.VocabSize, DModel: mc.DModel, NHeads: mc.NHeads, NLayers: mc.NLayers, DFF: mc.DFF,
		MaxLen: mc.MaxLen, Causal: mc.Causal, Task: mc.Task, NClasses: mc.NClasses, PadID: mc.PadID,
		Mixer: mc.Kind().Name, JSON: configJSON, LabelNames: labels, Step: step, Precision: mc.Precision,
	}
	if mc.Train != nil {
		c.SeqLen = mc.Train.SeqLen
	}
	return c
}

// Config returns the model's resolved configuration, a copy.
func (m *Model) Config() Config { return copyConfig(m.cfg) }

// copyConfig is a deep copy of c.
func copyConfig(c Config) Config {
	if c.PadID != nil {
		p := *c.PadID
		c.PadID = &p
	}
	c.LabelNames = append([]string(nil), c.LabelNames...)
	c.JSON = append(json.RawMessage(nil), c.JSON...)
	return c
}

// Encode returns the token ids of text: through the model's tokenizer
// when its config names one (special tokens' contents in text encode as
// ordinary text), else the bytes of text as ids 0–255, the byte-level
// vocabulary. A byte-level model that pads needs its pad_id outside 0–255
// for text input (vocab_size ≥ 257); otherwise a byte equal to pad_id is
// read as padding.
func (m *Model) Encode(text string) []int32 {
	if m.tok != nil {
		ids := m.tok.Encode(text)
		out := make([]int32, len(ids))
		for i, id := range ids {
			out[i] = int32(id)
		}
		return out
	}
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

// Tokenizer returns the tokenizer the model reads text through, or nil for
// a byte-level model.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Decode returns the text of ids, Encode's inverse: the bytes of their
// tokens, or for a byte-level model the bytes the ids are. The result is
// not valid UTF-8 where ids split a character. An id that is no token (for
// a byte-level model, outside 0–255) is an error naming it.
func (m *Model) Decode(ids []int32) (string, error) {
	return string(m.appendText(nil, ids...)), m.checkText(ids)
}

// checkText returns an error naming the first id of ids that is no token.
func (m *Model) checkText(ids []int32) error {
	for i, id := range ids {
		if m.tok != nil {
			if _, ok := m.tok.Token(int(id)); ok {
				continue
			}
		} else if id >= 0 && id < 256 {
			continue
		}
		return fmt.Errorf("tokenmix: Decode: ids[%d] = %d is not a token of this model's text", i, id)
	}
	return nil
}

// appendText appends the bytes of the ids that are tokens to dst.
func (m *Model) appendText(dst []byte, ids ...int32) []byte {
	for _, id := range ids {
		if m.tok != nil {
			s, _ := m.tok.Token(int(id))
			dst = append(dst, s...)
		} else if id >= 0 && id < 256 {
			dst = append(dst, byte(id))
		}
	}
	return dst
}

// acquire waits for the model's pass slot or ctx.
func (m *Model) acquire(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil { // before the select, which picks at random among ready cases
		return nil, err
	}
	select {
	case m.passes <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() {
		m.ws.Store(m.net.WorkspaceBytes())
		<-m.passes
	}, nil
}
