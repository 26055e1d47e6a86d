package tokenmix

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// TrainConfig is a model and its training, the Go form of the JSON config
// that `tokenmix train --config` reads and a run saves as config.json
// (docs/model.md lists every key; a field's comment gives its key). Train
// checks it by the JSON's strict rules, with errors naming the key.
//
// A zero field is inferred or takes its default. Train infers the task
// ("tag" when the examples have spans or tags, "classify" when they have
// labels, else "lm"), n_classes,
// vocab_size (256 for text, or the largest id plus one; plus a pad id when
// a classifier's inputs differ in length, which pad_id then names) and
// max_len (the longest input; for TextFiles, Size's window) from the
// training data. The model's shape comes from Size, or from the model
// WithInit starts from; Causal, when nil, is true for an lm. Mixer.Kind
// defaults to "full", and the Train fields to the defaults of the
// "train" object.
type TrainConfig struct {
	VocabSize int    `json:"vocab_size,omitempty"`
	DModel    int    `json:"d_model,omitempty"`
	NHeads    int    `json:"n_heads,omitempty"`
	NLayers   int    `json:"n_layers,omitempty"`
	DFF       int    `json:"d_ff,omitempty"`
	MaxLen    int    `json:"max_len,omitempty"`
	Causal    *bool  `json:"causal,omitempty"` // nil: true for an lm, false otherwise
	Task      string `json:"task,omitempty"`   // "lm", "classify" or "tag"
	NClasses  int    `json:"n_classes,omitempty"`
	PadID     *int   `json:"pad_id,omitempty"`
	Pool      string `json:"pool,omitempty"` // "mean" or "first"

	Reversible bool    `json:"reversible,omitempty"`
	Checkpoint bool    `json:"checkpoint,omitempty"`
	FFChunks   int     `json:"ff_chunks,omitempty"`
	Precision  string  `json:"precision,omitempty"` // "fp32", "bf16" or "fp16"
	Dropout    float64 `json:"dropout,omitempty"`
	// Tokenizer is a tokenizer.json (or a tiktoken rank file with
	// TokenizerPattern) that text goes through; empty: text is bytes. A
	// relative path is relative to the working directory (in a config
	// file, to the file's directory). The run keeps a copy.
	Tokenizer        string `json:"tokenizer,omitempty"`
	TokenizerPattern string `json:"tokenizer_pattern,omitempty"`

	// ChatTemplate renders conversations (Example.Messages, JSONL lines
	// with "messages"); nil: DefaultChatTemplate, which a run trained on
	// conversations then records.
	ChatTemplate *ChatTemplate `json:"chat_template,omitempty"`

	// Mixer is the token mixer: its kind and the kind's options
	// (mixer.OptionsOf("strided", map[string]any{"block": 32})).
	Mixer mixer.Options `json:"mixer"`
	// Train is the "train" object.
	Train TrainSettings `json:"train"`

	// Size picks the shape of the model when DModel, NHeads, NLayers and
	// DFF are zero (and no WithInit model gives them): "small" (the
	// default: d_model 64, 4 heads, 2 layers, d_ff 256, text windows of
	// 256) or "base" (d_model 256, 8 heads, 4 layers, d_ff 1024, text
	// windows of 512). It is not saved: the run's config has the sizes.
	Size string `json:"-"`
	// Labels names a classifier's classes in index order, or a tagger's
	// span labels; default: the sorted distinct labels of the training
	// data (a classifier's numerically sorted when all are integers; for
	// a stream, of its first examples). It is not a config key: the run
	// keeps the names in run.json (a tagger's as BIO tags).
	Labels []string `json:"-"`
}

// TrainSettings is the config's "train" object. A zero field takes its
// default; GradClip and EvalEvery, whose 0 in JSON disables clipping and
// validation, take a negative value for that in Go.
type TrainSettings struct {
	BatchSize   int     `json:"batch_size,omitempty"`   // default 8
	SeqLen      int     `json:"seq_len,omitempty"`      // default max_len
	Steps       int     `json:"steps,omitempty"`        // default 1000
	LR          float64 `json:"lr,omitempty"`           // default 3e-4
	MinLR       float64 `json:"min_lr,omitempty"`       // default 0
	Warmup      int     `json:"warmup,omitempty"`       // default 0
	WeightDecay float64 `json:"weight_decay,omitempty"` // default 0
	GradClip    float64 `json:"grad_clip,omitempty"`    // default 1; negative: none
	Beta1       float64 `json:"beta1,omitempty"`        // default 0.9
	Beta2       float64 `json:"beta2,omitempty"`        // default 0.999
	Eps         float64 `json:"eps,omitempty"`          // default 1e-8
	Seed        uint64  `json:"seed,omitempty"`         // default 0
	LogEvery    int     `json:"log_every,omitempty"`    // default 10
	EvalEvery   int     `json:"eval_every,omitempty"`   // default 100; negative: never
	EvalBatches int     `json:"eval_batches,omitempty"` // default 4
	// CheckpointEvery saves every N steps (default 0: at the end only).
	CheckpointEvery int     `json:"checkpoint_every,omitempty"`
	KeepCheckpoints int     `json:"keep_checkpoints,omitempty"` // default 2
	LabelSmoothing  float64 `json:"label_smoothing,omitempty"`
	Schedule        string  `json:"schedule,omitempty"` // "cosine" (default) or "constant"
	// Freeze lists parameter name prefixes that training leaves as they
	// are (WithFreeze sets it).
	Freeze     []string          `json:"freeze,omitempty"`
	Pretrain   *PretrainSettings `json:"pretrain,omitempty"`
	Curriculum []CurriculumStage `json:"curriculum,omitempty"`
}

// PretrainSettings is train.pretrain, a self-pretraining stage before
// training on the labels (docs/model.md, "Self-pretraining").
type PretrainSettings struct {
	Objective string  `json:"objective"` // "mlm" or "lm"
	Steps     int     `json:"steps"`
	MaskRate  float64 `json:"mask_rate,omitempty"`
	MaskID    *int    `json:"mask_id,omitempty"` // mlm: the mask token
	LR        float64 `json:"lr,omitempty"`
	MinLR     float64 `json:"min_lr,omitempty"`
	Warmup    int     `json:"warmup,omitempty"`
}

// CurriculumStage is one stage of train.curriculum: Steps updates on
// sequences of Len tokens, in batches of BatchSize (default batch_size).
type CurriculumStage struct {
	Len       int `json:"len"`
	Steps     int `json:"steps"`
	BatchSize int `json:"batch_size,omitempty"`
}

// MarshalJSON writes the settings as the "train" object: zero fields
// left out, a negative GradClip or EvalEvery as 0.
func (t TrainSettings) MarshalJSON() ([]byte, error) {
	type plain TrainSettings
	p := plain(t)
	var zeros []string
	if p.GradClip < 0 {
		p.GradClip, zeros = 0, append(zeros, "grad_clip")
	}
	if p.EvalEvery < 0 {
		p.EvalEvery, zeros = 0, append(zeros, "eval_every")
	}
	b, err := json.Marshal(p)
	if err != nil || len(zeros) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range zeros {
		m[k] = json.RawMessage("0")
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the "train" object; an explicit 0 for grad_clip or
// eval_every becomes −1 (disabled).
func (t *TrainSettings) UnmarshalJSON(b []byte) error {
	type plain TrainSettings
	var p plain
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if v, ok := m["grad_clip"]; ok && p.GradClip == 0 && string(bytes.TrimSpace(v)) != "null" {
		p.GradClip = -1
	}
	if v, ok := m["eval_every"]; ok && p.EvalEvery == 0 && string(bytes.TrimSpace(v)) != "null" {
		p.EvalEvery = -1
	}
	*t = TrainSettings(p)
	return nil
}

// ParseTrainConfig parses the JSON of `tokenmix train --config`. Keys are
// checked strictly: an unknown key, a value of the wrong type and, when
// the config gives the model's sizes, a value out of range are errors
// naming the key. Keys left out are inferred or defaulted by Train.
func ParseTrainConfig(b []byte) (TrainConfig, error) {
	var c TrainConfig
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return TrainConfig{}, fmt.Errorf("tokenmix: config: %w", jsonKeyError(err))
	}
	if d.More() {
		return TrainConfig{}, fmt.Errorf("tokenmix: config: more than one JSON value")
	}
	// A config complete enough to stand alone is checked now, by the
	// same parser Train uses.
	if c.VocabSize > 0 && c.DModel > 0 && c.NHeads > 0 && c.NLayers > 0 && c.DFF > 0 && c.MaxLen > 0 && c.Task != "" && c.Mixer.Kind != "" {
		if _, err := c.parse(); err != nil {
			return TrainConfig{}, fmt.Errorf("tokenmix: %w", err)
		}
	}
	return c, nil
}

// jsonKeyError rewords encoding/json's errors in the config's terms.
func jsonKeyError(err error) error {
	var te *json.UnmarshalTypeError
	if e, ok := err.(*json.UnmarshalTypeError); ok {
		te = e
		return fmt.Errorf("%s: want a %s, got a JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

// parse resolves c, complete, through the JSON config parser: the one set
// of rules, defaults and messages.
func (c TrainConfig) parse() (*model.Config, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	mc, err := model.ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return mc, nil
}

// sizes are TrainConfig.Size's shapes.
var sizes = map[string]struct{ d, heads, layers, ff, window int }{
	"small": {64, 4, 2, 256, 256},
	"base":  {256, 8, 4, 1024, 512},
}

// ChatTemplate is the config's chat_template: how a conversation renders
// into text. Message holds {role} (at most once) and {content} (exactly
// once); Prompt, the reply's header, ends a prompt; a reply ends where
// the model writes Stop.
type ChatTemplate struct {
	Message string `json:"message"`
	Prompt  string `json:"prompt"`
	Stop    string `json:"stop"`
}

// DefaultChatTemplate is the template of a run that names none: each
// message as <|role|>, a newline, the content and a newline; the reply's
// prompt <|assistant|> and a newline; a reply ends at the next <|.
var DefaultChatTemplate = ChatTemplate(chat.Default)
