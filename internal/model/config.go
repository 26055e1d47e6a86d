package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/internal/strict"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// Config is the model contract's JSON config (see docs/model.md). Zero
// values of optional fields mean their documented defaults after parsing.
type Config struct {
	VocabSize int // vocab_size: number of token ids (required)
	DModel    int // d_model: channels d (required)
	NHeads    int // n_heads: heads; must divide d_model (required)
	NLayers   int // n_layers: blocks (required)
	DFF       int // d_ff: hidden width of the feed-forward (required)
	MaxLen    int // max_len: longest sequence; rows of pos.weight (required)

	Causal bool   // causal: mixers see only keys j ≤ i (default false)
	Task   string // task: "lm", "classify", "tag" or "embed" (required)
	// NClasses is n_classes, the classifier width (classify only, ≥ 2).
	NClasses int
	// PadID is pad_id: tokens equal to it are excluded as keys and from the
	// classify pooling. nil when absent.
	PadID *int
	// Pool is pool, the classify and embed pooling: "mean" (default)
	// averages LN_f(h) over the non-pad positions; "first" takes position
	// 0 (a CLS-style read-out, e.g. ListOps' root operator).
	Pool string
	// Temperature is temperature, an embedder's InfoNCE temperature τ
	// (task "embed" only; default DefaultTemperature).
	Temperature float64

	Reversible bool // reversible: reversible residual blocks (default false)
	Checkpoint bool // checkpoint: recompute block internals in backward (default false)
	// FFChunks is ff_chunks: the feed-forward runs over the B·T rows in this
	// many chunks, so the d_ff-wide activation never exists for all rows at
	// once; it is recomputed in backward (default 1 = keep it).
	FFChunks int
	// Precision is precision, the arithmetic of training and inference
	// (float32 models; a float64 model computes in float64 whatever it
	// says): "fp32" (default); "bf16", matrix products on bf16 copies of
	// their operands with float32 sums; "fp16", float32 arithmetic with
	// dynamic loss scaling in training (train.LossScale).
	Precision string
	// Dropout is dropout, the probability p that an element of a block's
	// branch output (the mixer's and the feed-forward's, before each is
	// added to the residual stream) is zeroed in training; the others are
	// scaled by 1/(1−p). Evaluation and inference never drop. 0 (default)
	// disables it; see Model.Train and docs/model.md, "Dropout".
	Dropout float64

	// Tokenizer is tokenizer: the tokenizer file the model reads text
	// through (a tokenizer.json, or a tiktoken rank file with
	// TokenizerPattern), relative to the config file; a run directory and
	// an export keep their copy as "tokenizer.json". Empty: text is bytes,
	// ids 0–255.
	Tokenizer string
	// TokenizerPattern is tokenizer_pattern, the pre-tokenisation pattern
	// of a tiktoken rank file (gpt2, cl100k, o200k or blocks), which
	// carries none.
	TokenizerPattern string

	// ChatTemplate is chat_template, how conversations render into text
	// (package chat); nil when absent (chat.Default applies).
	ChatTemplate *chat.Template

	// Mixer is the "mixer" object: its kind and kind-specific options.
	Mixer mixer.Options
	// Train is the optional "train" object (nil when absent; `grad`
	// ignores it).
	Train *TrainConfig

	kind mixer.Kind
	// head is the head's name prefix when not "head" (PretrainStage).
	head string
	// revKeep (tests only) makes reversible blocks keep every block's
	// inputs and internals instead of reconstructing them in backward.
	revKeep bool
}

// TrainConfig is the "train" object. Every key is optional.
type TrainConfig struct {
	BatchSize   int     // batch_size (default 8)
	SeqLen      int     // seq_len: training window (default max_len)
	Steps       int     // steps: number of updates (default 1000)
	LR          float64 // lr: peak learning rate (default 3e-4)
	MinLR       float64 // min_lr: end of the cosine decay (default 0)
	Warmup      int     // warmup: linear warmup updates (default 0)
	WeightDecay float64 // weight_decay (default 0)
	GradClip    float64 // grad_clip: global norm; 0 disables (default 1)
	Beta1       float64 // beta1 (default 0.9)
	Beta2       float64 // beta2 (default 0.999)
	Eps         float64 // eps (default 1e-8)
	Seed        uint64  // seed: data order and mixer randomness (default 0)
	LogEvery    int     // log_every: metrics line every N steps (default 10)
	EvalEvery   int     // eval_every: validation every N steps, 0 = never (default 100)
	EvalBatches int     // eval_batches: batches per validation (default 4)
	// CheckpointEvery is checkpoint_every: save every N steps, 0 = only at
	// the end (default 0).
	CheckpointEvery int
	// KeepCheckpoints is keep_checkpoints: the newest N complete
	// checkpoints are kept (default 2).
	KeepCheckpoints int
	// Freeze is freeze: parameter name prefixes ("embed.", "blocks.0.")
	// whose parameters training leaves as they are (no update, no weight
	// decay; their gradients count in no norm). Each must match at least
	// one parameter (Model.Frozen). nil when absent.
	Freeze []string
	// LabelSmoothing is label_smoothing: the training loss is the
	// cross-entropy against (1−ε)·onehot + ε/V (default 0, in [0, 1)).
	// Validation and evaluation losses are not smoothed.
	LabelSmoothing float64
	// Schedule is schedule: the learning rate after warmup, "cosine"
	// (decay to min_lr at the last step, the default) or "constant" (lr
	// throughout; min_lr must then be 0).
	Schedule string
	// Pretrain is the optional "pretrain" object, a first stage of
	// self-pretraining (nil when absent).
	Pretrain *PretrainConfig
	// Curriculum is curriculum, a length curriculum: the first updates
	// of training (after any pretraining stage) run on shorter sequences,
	// stage by stage, and the rest at the training length. train.steps
	// counts them; the learning-rate schedule spans them all. nil when
	// absent.
	Curriculum []CurriculumStage
}

// CurriculumStage is one entry of train.curriculum.
type CurriculumStage struct {
	// Len is len: the stage's sequence length, below the training length
	// (seq_len), and above the previous stage's (required).
	Len int
	// Steps is steps: the stage's updates (required, ≥ 1).
	Steps int
	// BatchSize is batch_size: its sequences per batch (default
	// train.batch_size).
	BatchSize int
}

// CurriculumSteps is the updates of every train.curriculum stage.
func (t *TrainConfig) CurriculumSteps() int {
	n := 0
	for _, s := range t.Curriculum {
		n += s.Steps
	}
	return n
}

// PretrainConfig is the train object's "pretrain" object: a first stage
// that trains the model with its own head, pretrain_head [vocab_size, d],
// on the task's training inputs (labels unused), before the task head is
// initialised and fine-tuning runs train.steps updates (docs/model.md,
// "Self-pretraining").
type PretrainConfig struct {
	// Objective is objective: "mlm" (masked-token prediction, bidirectional
	// models) or "lm" (next-token prediction, causal models). Required.
	Objective string
	Steps     int     // steps: updates of the stage (required, ≥ 1)
	MaskRate  float64 // mask_rate: mlm, the probability a non-pad token is masked (default DefaultMaskRate)
	// MaskID is mask_id (mlm only, required there): the token id that
	// replaces a masked token, below vocab_size and ≠ pad_id; the data must
	// not use it.
	MaskID int
	LR     float64 // lr: the stage's peak learning rate (default train.lr)
	MinLR  float64 // min_lr: the end of its cosine decay (default train.min_lr)
	Warmup int     // warmup: its linear warmup updates (default train.warmup)
}

// DefaultMaskRate is train.pretrain.mask_rate when it is not given.
const DefaultMaskRate = 0.15

// Objectives of the pretraining stage.
const (
	ObjectiveMLM = "mlm"
	ObjectiveLM  = "lm"
)

// PretrainHead is the name prefix of the pretraining stage's head,
// PretrainHead+".weight" [vocab_size, d] and PretrainHead+".bias"
// [vocab_size].
const PretrainHead = "pretrain_head"

// Limits of a config, so that a corrupt or hostile config is an error at
// parse time rather than a hang or an allocation beyond any machine.
const (
	// MaxLayers bounds n_layers (ParseConfig builds every block's mixer).
	MaxLayers = 1 << 14
	// MaxHeads bounds n_heads (mixers keep per-head state).
	MaxHeads = 1 << 16
	// MaxParams bounds the parameter count, the mixers' included (2^36,
	// about 69 billion: 1.1 TB of float32 parameters, gradients and AdamW
	// moments).
	MaxParams = 1 << 36
)

// Kind returns the resolved mixer kind.
func (c *Config) Kind() mixer.Kind { return c.kind }

// HeadOut is the width of the head: vocab_size for lm, n_classes for
// classify and tag, d_model for embed (the embedding).
func (c *Config) HeadOut() int {
	switch c.Task {
	case "classify", "tag":
		return c.NClasses
	case "embed":
		return c.DModel
	}
	return c.VocabSize
}

// Pooled says the head reads one pooled row per sequence (classify and
// embed) rather than every position.
func (c *Config) Pooled() bool { return c.Task == "classify" || c.Task == "embed" }

// DefaultTemperature is an embedder's temperature when the config gives
// none.
const DefaultTemperature = 0.05

// LoadConfig reads and parses the config file at path.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses and validates a JSON config, resolving the mixer kind
// in the registry.
func ParseConfig(data []byte) (*Config, error) {
	return ParseConfigWith(data, registry.Lookup)
}

// ParseConfigWith is ParseConfig with another mixer lookup (tests use it to
// plug in test-only mixers).
func ParseConfigWith(data []byte, lookup func(string) (mixer.Kind, error)) (*Config, error) {
	p, err := strict.Parse("", data)
	if err != nil {
		return nil, err
	}
	p.Hint = "docs/model.md lists the keys"
	c := &Config{}
	p.IntRequired("vocab_size", &c.VocabSize)
	p.IntRequired("d_model", &c.DModel)
	p.IntRequired("n_heads", &c.NHeads)
	p.IntRequired("n_layers", &c.NLayers)
	p.IntRequired("d_ff", &c.DFF)
	p.IntRequired("max_len", &c.MaxLen)
	p.Bool("causal", &c.Causal)
	if !p.String("task", &c.Task) {
		p.Fail("task", "required")
	}
	p.Int("n_classes", &c.NClasses)
	var pad int
	if p.Int("pad_id", &pad) {
		c.PadID = &pad
	}
	p.String("pool", &c.Pool)
	p.Float("temperature", &c.Temperature)
	p.Bool("reversible", &c.Reversible)
	p.Bool("checkpoint", &c.Checkpoint)
	c.FFChunks = 1
	p.Int("ff_chunks", &c.FFChunks)
	p.String("precision", &c.Precision)
	p.Float("dropout", &c.Dropout)
	p.String("tokenizer", &c.Tokenizer)
	p.String("tokenizer_pattern", &c.TokenizerPattern)
	var chatRaw json.RawMessage
	hasChat := p.Object("chat_template", &chatRaw)
	var mixRaw json.RawMessage
	if !p.Object("mixer", &mixRaw) {
		p.Fail("mixer", "required")
	}
	var tr json.RawMessage
	hasTrain := p.Object("train", &tr)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if hasTrain {
		if c.Train, err = parseTrain(tr); err != nil {
			return nil, err
		}
	}
	if hasChat {
		t, err := chat.Parse(chatRaw)
		if err != nil {
			return nil, err
		}
		c.ChatTemplate = &t
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Mixer, err = mixer.ParseOptions(mixRaw); err != nil {
		return nil, err
	}
	if err := c.resolve(lookup); err != nil {
		return nil, err
	}
	return c, nil
}

// Resolve checks a Config built in Go as ParseConfig checks a parsed one,
// with the same errors naming the same keys, fills in the defaults of
// Precision, Pool and Train.SeqLen, and resolves the mixer kind in the
// registry. Optional fields hold their documented defaults only when set:
// FFChunks must be ≥ 1, and Train (when not nil) starts from
// DefaultTrainConfig.
func (c *Config) Resolve() error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.Train != nil {
		if err := c.Train.check(); err != nil {
			return err
		}
	}
	return c.resolve(registry.Lookup)
}

// resolve looks up the mixer kind, checks the mixers and the training
// window.
func (c *Config) resolve(lookup func(string) (mixer.Kind, error)) error {
	var err error
	if c.kind, err = lookup(c.Mixer.Kind); err != nil {
		return err
	}
	if err := c.checkMixer(); err != nil {
		return err
	}
	if c.Train != nil && c.Train.SeqLen == 0 {
		c.Train.SeqLen = c.MaxLen
	}
	if c.Train != nil && c.Train.SeqLen > c.MaxLen {
		return fmt.Errorf("train.seq_len: %d exceeds max_len %d", c.Train.SeqLen, c.MaxLen)
	}
	if c.Train != nil {
		if n := len(c.Train.Curriculum); n > 0 && c.Train.Curriculum[n-1].Len >= c.Train.SeqLen {
			return fmt.Errorf("train.curriculum[%d].len: %d is not below the training length %d (train.seq_len, default max_len)", n-1, c.Train.Curriculum[n-1].Len, c.Train.SeqLen)
		}
	}
	if c.Train != nil && c.Train.Pretrain != nil {
		return c.checkPretrain()
	}
	return nil
}

// SetPrecision sets Precision to p, or returns an error naming it when it
// is not "fp32", "bf16" or "fp16".
func (c *Config) SetPrecision(p string) error {
	switch p {
	case "fp32", "bf16", "fp16":
		c.Precision = p
		return nil
	}
	return fmt.Errorf("precision: must be \"fp32\", \"bf16\" or \"fp16\", got %q", p)
}

func (c *Config) validate() error {
	pos := func(key string, v int) error {
		if v < 1 {
			return fmt.Errorf("%s: must be ≥ 1, got %d", key, v)
		}
		return nil
	}
	for _, kv := range []struct {
		k string
		v int
	}{{"vocab_size", c.VocabSize}, {"d_model", c.DModel}, {"n_heads", c.NHeads}, {"n_layers", c.NLayers}, {"d_ff", c.DFF}, {"max_len", c.MaxLen}, {"ff_chunks", c.FFChunks}} {
		if err := pos(kv.k, kv.v); err != nil {
			return err
		}
	}
	if c.DModel%c.NHeads != 0 {
		return fmt.Errorf("n_heads: must divide d_model (%d %% %d ≠ 0)", c.DModel, c.NHeads)
	}
	switch c.Task {
	case "lm":
		if c.NClasses != 0 {
			return fmt.Errorf("n_classes: only for task \"classify\"")
		}
		if c.Pool != "" {
			return fmt.Errorf("pool: only for task \"classify\"")
		}
	case "tag":
		if c.NClasses < 2 {
			return fmt.Errorf("n_classes: must be ≥ 2 for task \"tag\" (the tags: O, and B- and I- of each label), got %d", c.NClasses)
		}
		if c.Pool != "" {
			return fmt.Errorf("pool: only for task \"classify\"")
		}
	case "embed":
		if c.NClasses != 0 {
			return fmt.Errorf("n_classes: not for task \"embed\" (its head is d_model wide)")
		}
		if c.Temperature == 0 {
			c.Temperature = DefaultTemperature
		}
		if !(c.Temperature > 0 && c.Temperature <= 10) {
			return fmt.Errorf("temperature: must be in (0, 10], got %g", c.Temperature)
		}
	case "classify":
		if c.NClasses < 2 {
			return fmt.Errorf("n_classes: must be ≥ 2 for task \"classify\", got %d", c.NClasses)
		}
	default:
		return fmt.Errorf("task: must be \"lm\", \"classify\", \"tag\" or \"embed\", got %q", c.Task)
	}
	if c.Pooled() {
		switch c.Pool {
		case "":
			c.Pool = "mean"
		case "mean", "first":
		default:
			return fmt.Errorf("pool: must be \"mean\" or \"first\", got %q", c.Pool)
		}
	}
	if c.Temperature != 0 && c.Task != "embed" {
		return fmt.Errorf("temperature: only for task \"embed\"")
	}
	if c.PadID != nil && (*c.PadID < 0 || *c.PadID >= c.VocabSize) {
		return fmt.Errorf("pad_id: must be in [0, vocab_size=%d), got %d", c.VocabSize, *c.PadID)
	}
	if c.Precision == "" {
		c.Precision = "fp32"
	}
	if err := c.SetPrecision(c.Precision); err != nil {
		return err
	}
	if c.TokenizerPattern != "" {
		if c.Tokenizer == "" {
			return fmt.Errorf("tokenizer_pattern: set without tokenizer")
		}
		if _, err := tokenizer.ParsePattern(c.TokenizerPattern); err != nil {
			return fmt.Errorf("tokenizer_pattern: %w", err)
		}
	}
	if c.ChatTemplate != nil {
		if err := c.ChatTemplate.Check(); err != nil {
			return err
		}
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("dropout: must be in [0, 1), got %g", c.Dropout)
	}
	if c.Reversible && c.Precision == "fp16" {
		return fmt.Errorf("precision: \"fp16\" not with reversible (rounding the stored halves would break the exact reconstruction of block inputs)")
	}
	if c.Reversible && c.Checkpoint {
		return fmt.Errorf("checkpoint: not with reversible (reversible blocks already recompute in backward)")
	}
	if c.NLayers > MaxLayers {
		return fmt.Errorf("n_layers: must be ≤ %d, got %d", MaxLayers, c.NLayers)
	}
	if c.NHeads > MaxHeads {
		return fmt.Errorf("n_heads: must be ≤ %d, got %d", MaxHeads, c.NHeads)
	}
	if c.denseParams() > MaxParams {
		return fmt.Errorf("config: more than %d parameters without the mixers' (vocab_size, max_len, d_model, d_ff, n_layers or n_classes too large)", MaxParams)
	}
	return nil
}

// The parameter counts below saturate at MaxParams+1, so that they cannot
// overflow whatever the config's sizes.

// countMul is a·b (a, b ≥ 0), saturated.
func countMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a < 0 || b < 0 || a > (MaxParams+1)/b {
		return MaxParams + 1
	}
	return min(a*b, MaxParams+1)
}

// countAdd is a+b (a, b ≥ 0), saturated.
func countAdd(a, b int) int {
	if a < 0 || b < 0 || a > MaxParams+1-b {
		return MaxParams + 1
	}
	return min(a+b, MaxParams+1)
}

// denseParams counts the parameters other than the mixers' (see
// paramSpecs), saturated.
func (c *Config) denseParams() int {
	D := c.DModel
	n := countAdd(countMul(c.VocabSize, D), countMul(c.MaxLen, D))
	block := countAdd(countMul(5, D), countMul(countMul(2, D), c.DFF))
	block = countAdd(block, c.DFF)
	n = countAdd(n, countMul(c.NLayers, block))
	n = countAdd(n, countMul(2, D))
	return countAdd(n, countMul(c.HeadOut(), countAdd(D, 1)))
}

// specParams is the size of a parameter spec, saturated.
func specParams(s mixer.ParamSpec) int {
	n := 1
	for _, d := range s.Shape {
		n = countMul(n, d)
	}
	return n
}

// checkMixer checks the kind's capabilities and builds the mixer of every
// layer once, so option errors surface at parse time.
func (c *Config) checkMixer() error {
	k := c.kind
	if c.Causal && !k.Causal {
		return fmt.Errorf("causal: mixer kind %q does not support causal masking", k.Name)
	}
	if !c.Causal && !k.Bidirectional {
		return fmt.Errorf("causal: mixer kind %q is causal-only; set \"causal\": true", k.Name)
	}
	n := c.denseParams()
	for i := 0; i < c.NLayers; i++ {
		m, err := k.New64(c.MixerConfig(i))
		if err != nil {
			return err
		}
		for _, s := range m.Params() {
			n = countAdd(n, specParams(s))
		}
		if n > MaxParams {
			return fmt.Errorf("mixer: more than %d parameters in all with the %s mixers' (their options or max_len, d_model or n_layers too large)", MaxParams, k.Name)
		}
	}
	return c.Mixer.Err()
}

// MixerConfig is the mixer.Config of block i.
func (c *Config) MixerConfig(i int) mixer.Config {
	return mixer.Config{D: c.DModel, Heads: c.NHeads, MaxLen: c.MaxLen, Causal: c.Causal,
		Layer: i, NLayers: c.NLayers, Precision: c.Precision, Opts: c.Mixer}
}

func parseTrain(data []byte) (*TrainConfig, error) {
	p, err := strict.Parse("train.", data)
	if err != nil {
		return nil, err
	}
	p.Hint = "docs/model.md lists the keys"
	t := &TrainConfig{BatchSize: 8, Steps: 1000, LR: 3e-4, GradClip: 1, Beta1: 0.9, Beta2: 0.999,
		Eps: 1e-8, LogEvery: 10, EvalEvery: 100, EvalBatches: 4, KeepCheckpoints: 2, Schedule: "cosine"}
	p.Int("batch_size", &t.BatchSize)
	p.Int("seq_len", &t.SeqLen)
	p.Int("steps", &t.Steps)
	p.Float("lr", &t.LR)
	p.Float("min_lr", &t.MinLR)
	p.Int("warmup", &t.Warmup)
	p.Float("weight_decay", &t.WeightDecay)
	p.Float("grad_clip", &t.GradClip)
	p.Float("beta1", &t.Beta1)
	p.Float("beta2", &t.Beta2)
	p.Float("eps", &t.Eps)
	var seed int64
	p.Int64("seed", &seed)
	p.Int("log_every", &t.LogEvery)
	p.Int("eval_every", &t.EvalEvery)
	p.Int("eval_batches", &t.EvalBatches)
	p.Int("checkpoint_every", &t.CheckpointEvery)
	p.Int("keep_checkpoints", &t.KeepCheckpoints)
	p.Float("label_smoothing", &t.LabelSmoothing)
	if fr, ok := p.Raw("freeze"); ok {
		if err := json.Unmarshal(fr, &t.Freeze); err != nil || t.Freeze == nil {
			p.Fail("freeze", "want an array of parameter name prefixes, got %s", clipJSON(fr))
		}
	}
	p.String("schedule", &t.Schedule)
	var pre json.RawMessage
	hasPre := p.Object("pretrain", &pre)
	cur, hasCur := p.Raw("curriculum")
	if err := p.Err(); err != nil {
		return nil, err
	}
	if hasCur {
		if t.Curriculum, err = parseCurriculum(cur, t.BatchSize); err != nil {
			return nil, err
		}
	}
	t.Seed = uint64(seed)
	if seed < 0 {
		return nil, fmt.Errorf("train.seed: must be ≥ 0")
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	if hasPre {
		if t.Pretrain, err = parsePretrain(pre, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// parseCurriculum reads the train object's "curriculum" array; a stage's
// batch_size defaults to batch.
func parseCurriculum(data []byte, batch int) ([]CurriculumStage, error) {
	var raws []json.RawMessage
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &raws) != nil {
		return nil, fmt.Errorf("train.curriculum: want an array of {\"len\", \"steps\", \"batch_size\"} objects, got %s", clipJSON(data))
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("train.curriculum: empty (leave it out for none)")
	}
	stages := make([]CurriculumStage, len(raws))
	for i, r := range raws {
		p, err := strict.Parse(fmt.Sprintf("train.curriculum[%d].", i), r)
		if err != nil {
			return nil, err
		}
		p.Hint = "want len, steps and batch_size"
		s := CurriculumStage{BatchSize: batch}
		p.IntRequired("len", &s.Len)
		p.IntRequired("steps", &s.Steps)
		p.Int("batch_size", &s.BatchSize)
		if err := p.Err(); err != nil {
			return nil, err
		}
		stages[i] = s
	}
	return stages, nil
}

// clipJSON is a JSON value for an error message, shortened past 40 bytes.
func clipJSON(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// checkCurriculum checks train.curriculum's stages: each len ≥ 1 and above
// the previous one, steps ≥ 1, batch_size ≥ 1, and at least one update
// left at the training length.
func (t *TrainConfig) checkCurriculum() error {
	prev := 0
	for i, s := range t.Curriculum {
		k := fmt.Sprintf("train.curriculum[%d].", i)
		switch {
		case s.Len < 1:
			return fmt.Errorf("%slen: must be ≥ 1, got %d", k, s.Len)
		case s.Len <= prev:
			return fmt.Errorf("%slen: must exceed the previous stage's len (%d), got %d", k, prev, s.Len)
		case s.Steps < 1:
			return fmt.Errorf("%ssteps: must be ≥ 1, got %d", k, s.Steps)
		case s.BatchSize < 1:
			return fmt.Errorf("%sbatch_size: must be ≥ 1, got %d", k, s.BatchSize)
		}
		prev = s.Len
	}
	if n := t.CurriculumSteps(); len(t.Curriculum) > 0 && n >= t.Steps {
		return fmt.Errorf("train.curriculum: its stages take %d updates, train.steps is %d: train.steps counts the curriculum's updates and must leave at least one at the training length", n, t.Steps)
	}
	return nil
}

// parsePretrain reads the train object's "pretrain" object; the learning
// rate settings default to t's.
func parsePretrain(data []byte, t *TrainConfig) (*PretrainConfig, error) {
	p, err := strict.Parse("train.pretrain.", data)
	if err != nil {
		return nil, err
	}
	p.Hint = "docs/model.md lists the keys"
	pc := &PretrainConfig{MaskRate: DefaultMaskRate, MaskID: -1, LR: t.LR, MinLR: t.MinLR, Warmup: t.Warmup}
	if !p.String("objective", &pc.Objective) {
		p.Fail("objective", "required (\"mlm\" or \"lm\")")
	}
	p.IntRequired("steps", &pc.Steps)
	hasRate := p.Float("mask_rate", &pc.MaskRate)
	hasMask := p.Int("mask_id", &pc.MaskID)
	p.Float("lr", &pc.LR)
	p.Float("min_lr", &pc.MinLR)
	p.Int("warmup", &pc.Warmup)
	if err := p.Err(); err != nil {
		return nil, err
	}
	switch pc.Objective {
	case ObjectiveMLM:
		if !hasMask {
			return nil, fmt.Errorf("train.pretrain.mask_id: required for objective \"mlm\" (a token id below vocab_size that the data does not use)")
		}
	case ObjectiveLM:
		if hasRate {
			return nil, fmt.Errorf("train.pretrain.mask_rate: only for objective \"mlm\"")
		}
		if hasMask {
			return nil, fmt.Errorf("train.pretrain.mask_id: only for objective \"mlm\"")
		}
	default:
		return nil, fmt.Errorf("train.pretrain.objective: must be \"mlm\" or \"lm\", got %q", pc.Objective)
	}
	if err := pc.check(); err != nil {
		return nil, err
	}
	return pc, nil
}

// check checks the ranges of the pretrain object's values that need no
// model config.
func (pc *PretrainConfig) check() error {
	switch {
	case pc.Objective != ObjectiveMLM && pc.Objective != ObjectiveLM:
		return fmt.Errorf("train.pretrain.objective: must be \"mlm\" or \"lm\", got %q", pc.Objective)
	case pc.Steps < 1:
		return fmt.Errorf("train.pretrain.steps: must be ≥ 1, got %d", pc.Steps)
	case pc.Objective == ObjectiveMLM && !(pc.MaskRate > 0 && pc.MaskRate <= 1):
		return fmt.Errorf("train.pretrain.mask_rate: must be in (0, 1], got %g", pc.MaskRate)
	case pc.Objective == ObjectiveMLM && pc.MaskID < 0:
		return fmt.Errorf("train.pretrain.mask_id: must be ≥ 0, got %d", pc.MaskID)
	case !(pc.LR > 0):
		return fmt.Errorf("train.pretrain.lr: must be > 0, got %g", pc.LR)
	case pc.MinLR < 0 || pc.MinLR > pc.LR:
		return fmt.Errorf("train.pretrain.min_lr: must be in [0, lr=%g], got %g (it defaults to train.min_lr)", pc.LR, pc.MinLR)
	case pc.Warmup < 0:
		return fmt.Errorf("train.pretrain.warmup: must be ≥ 0, got %d", pc.Warmup)
	}
	return nil
}

// checkPretrain checks the pretrain object against the model: the task,
// the objective against causal, and mask_id against vocab_size and pad_id.
func (c *Config) checkPretrain() error {
	pc := c.Train.Pretrain
	if err := pc.check(); err != nil {
		return err
	}
	if c.Task != "classify" {
		return fmt.Errorf("train.pretrain: only for task \"classify\" (an lm already trains on its inputs)")
	}
	if c.Train.Schedule == "constant" && pc.MinLR != 0 {
		return fmt.Errorf("train.pretrain.min_lr: the constant schedule (train.schedule) has no decay: leave min_lr out (or 0)")
	}
	switch {
	case pc.Objective == ObjectiveMLM && c.Causal:
		return fmt.Errorf("train.pretrain.objective: \"mlm\" needs a bidirectional model (causal: false); a causal model pretrains with \"lm\"")
	case pc.Objective == ObjectiveLM && !c.Causal:
		return fmt.Errorf("train.pretrain.objective: \"lm\" needs a causal model (causal: true); a bidirectional model pretrains with \"mlm\"")
	}
	if pc.Objective == ObjectiveMLM {
		if pc.MaskID >= c.VocabSize {
			return fmt.Errorf("train.pretrain.mask_id: must be in [0, vocab_size=%d), got %d", c.VocabSize, pc.MaskID)
		}
		if c.PadID != nil && pc.MaskID == *c.PadID {
			return fmt.Errorf("train.pretrain.mask_id: must differ from pad_id (%d)", *c.PadID)
		}
	}
	return nil
}

// PretrainStage returns the config of the pretraining stage's model: c
// with task "lm", so that the head is token-level [vocab_size, d], named
// PretrainHead, and a train object whose steps and learning-rate settings
// are the pretrain object's (the schedule's shape, train.schedule, is the
// same; label smoothing and the length curriculum are fine-tuning's only).
// It panics if c has no pretrain object.
func (c *Config) PretrainStage() *Config {
	pc := c.Train.Pretrain
	p := *c
	p.Task, p.NClasses, p.Pool, p.head = "lm", 0, "", PretrainHead
	t := *c.Train
	t.Steps, t.LR, t.MinLR, t.Warmup, t.Pretrain, t.LabelSmoothing, t.Freeze = pc.Steps, pc.LR, pc.MinLR, pc.Warmup, nil, 0, nil
	t.Curriculum = nil // the curriculum is fine-tuning's
	p.Train = &t
	return &p
}

// HeadName is the name prefix of the head's tensors: "head", or
// PretrainHead in a pretraining stage's config (PretrainStage).
func (c *Config) HeadName() string {
	if c.head != "" {
		return c.head
	}
	return "head"
}

// check checks the ranges of the train object's values.
func (t *TrainConfig) check() error {
	switch {
	case t.BatchSize < 1:
		return fmt.Errorf("train.batch_size: must be ≥ 1")
	case t.SeqLen < 0:
		return fmt.Errorf("train.seq_len: must be ≥ 1")
	case t.Steps < 1:
		return fmt.Errorf("train.steps: must be ≥ 1")
	case !(t.LR > 0):
		return fmt.Errorf("train.lr: must be > 0")
	case t.MinLR < 0 || t.MinLR > t.LR:
		return fmt.Errorf("train.min_lr: must be in [0, lr]")
	case t.Warmup < 0:
		return fmt.Errorf("train.warmup: must be ≥ 0")
	case t.WeightDecay < 0:
		return fmt.Errorf("train.weight_decay: must be ≥ 0")
	case t.GradClip < 0:
		return fmt.Errorf("train.grad_clip: must be ≥ 0 (0 disables clipping)")
	case !(t.Beta1 >= 0 && t.Beta1 < 1):
		return fmt.Errorf("train.beta1: must be in [0, 1)")
	case !(t.Beta2 >= 0 && t.Beta2 < 1):
		return fmt.Errorf("train.beta2: must be in [0, 1)")
	case !(t.Eps > 0):
		return fmt.Errorf("train.eps: must be > 0")
	case t.LogEvery < 1:
		return fmt.Errorf("train.log_every: must be ≥ 1")
	case t.EvalEvery < 0:
		return fmt.Errorf("train.eval_every: must be ≥ 0")
	case t.EvalBatches < 1:
		return fmt.Errorf("train.eval_batches: must be ≥ 1")
	case t.CheckpointEvery < 0:
		return fmt.Errorf("train.checkpoint_every: must be ≥ 0")
	case t.KeepCheckpoints < 1:
		return fmt.Errorf("train.keep_checkpoints: must be ≥ 1")
	case !(t.LabelSmoothing >= 0 && t.LabelSmoothing < 1):
		return fmt.Errorf("train.label_smoothing: must be in [0, 1), got %v", t.LabelSmoothing)
	case t.Schedule != "cosine" && t.Schedule != "constant":
		return fmt.Errorf("train.schedule: want \"cosine\" or \"constant\", got %q", t.Schedule)
	case t.Schedule == "constant" && t.MinLR != 0:
		return fmt.Errorf("train.min_lr: the constant schedule has no decay: leave min_lr out (or 0)")
	}
	return t.checkCurriculum()
}

// MarshalJSON writes the resolved config (defaults filled in) with the keys
// in contract order, so it can be printed, saved with a run and parsed back.
func (c *Config) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	first := true
	w := func(k string, v any) {
		if !first {
			b.WriteString(",")
		}
		first = false
		kb, _ := json.Marshal(k)
		var vb bytes.Buffer // without HTML escapes: a chat template's <| stays <|
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		b.WriteString("\n  ")
		b.Write(kb)
		b.WriteString(": ")
		b.Write(bytes.TrimRight(vb.Bytes(), "\n"))
	}
	w("vocab_size", c.VocabSize)
	w("d_model", c.DModel)
	w("n_heads", c.NHeads)
	w("n_layers", c.NLayers)
	w("d_ff", c.DFF)
	w("max_len", c.MaxLen)
	w("causal", c.Causal)
	w("task", c.Task)
	if c.Task == "classify" || c.Task == "tag" {
		w("n_classes", c.NClasses)
	}
	if c.Pooled() {
		w("pool", c.Pool)
	}
	if c.Task == "embed" {
		w("temperature", c.Temperature)
	}
	if c.PadID != nil {
		w("pad_id", *c.PadID)
	}
	w("reversible", c.Reversible)
	w("checkpoint", c.Checkpoint)
	w("ff_chunks", c.FFChunks)
	w("precision", c.Precision)
	if c.Dropout > 0 {
		w("dropout", c.Dropout)
	}
	if c.Tokenizer != "" {
		w("tokenizer", c.Tokenizer)
	}
	if c.TokenizerPattern != "" {
		w("tokenizer_pattern", c.TokenizerPattern)
	}
	if c.ChatTemplate != nil {
		w("chat_template", c.ChatTemplate)
	}
	w("mixer", c.Mixer.Raw())
	if t := c.Train; t != nil {
		tm := map[string]any{
			"batch_size": t.BatchSize, "seq_len": t.SeqLen, "steps": t.Steps, "lr": t.LR,
			"min_lr": t.MinLR, "warmup": t.Warmup, "weight_decay": t.WeightDecay,
			"grad_clip": t.GradClip, "beta1": t.Beta1, "beta2": t.Beta2, "eps": t.Eps,
			"seed": t.Seed, "log_every": t.LogEvery, "eval_every": t.EvalEvery,
			"eval_batches": t.EvalBatches, "checkpoint_every": t.CheckpointEvery,
			"keep_checkpoints": t.KeepCheckpoints,
		}
		// Written only when set, so that configs without them stay as
		// they were.
		if t.Freeze != nil {
			tm["freeze"] = t.Freeze
		}
		if t.LabelSmoothing != 0 {
			tm["label_smoothing"] = t.LabelSmoothing
		}
		if t.Schedule != "cosine" {
			tm["schedule"] = t.Schedule
		}
		if pc := t.Pretrain; pc != nil {
			pm := map[string]any{"objective": pc.Objective, "steps": pc.Steps, "lr": pc.LR,
				"min_lr": pc.MinLR, "warmup": pc.Warmup}
			if pc.Objective == ObjectiveMLM {
				pm["mask_rate"], pm["mask_id"] = pc.MaskRate, pc.MaskID
			}
			tm["pretrain"] = pm
		}
		if len(t.Curriculum) > 0 {
			var cs []map[string]int
			for _, st := range t.Curriculum {
				cs = append(cs, map[string]int{"len": st.Len, "steps": st.Steps, "batch_size": st.BatchSize})
			}
			tm["curriculum"] = cs
		}
		w("train", tm)
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}
