package arena

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/configs"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/strict"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// Preset is an arena configuration file (see docs/presets.md). Unknown keys
// are errors.
type Preset struct {
	// Description says what the preset is for (free text).
	Description string `json:"description,omitempty"`
	// Time is the wall time the whole arena takes on an idle 2-core machine,
	// a duration such as "30m" (shown by `tokenmix presets`).
	Time string `json:"time,omitempty"`
	// Task is {"name": "listops"|"fmnist"|"gosrc"|"recall", ...the task's
	// config keys (data.ListOpsConfig, ...)}.
	Task TaskSection `json:"task"`
	// Model holds the model-contract keys the arena does not derive from the
	// task.
	Model ModelSection `json:"model"`
	// Train holds the model contract's "train" keys; steps comes from
	// Budget, seq_len from the task.
	Train TrainSection `json:"train,omitzero"`
	// Budget is each mixer's training budget: a step count ("3000") or a
	// duration of training time ("90s", "5m"). MixerSteps overrides it for
	// the kinds it names.
	Budget string `json:"budget"`
	// MixerSteps maps a kind to its own step budget (≥ 1). A step budget
	// makes a run's figures depend only on the preset, the seed, the thread
	// count and the kernel path, not on the machine's speed or load.
	MixerSteps map[string]int `json:"mixer_steps,omitempty"`
	// TotalBudget, a duration, caps the sum of the runs' duration budgets:
	// each runnable mixer and seed gets min(Budget, TotalBudget / their
	// number). It does not apply to step budgets.
	TotalBudget string `json:"total_budget,omitempty"`
	// Seeds is the number of training seeds per mixer (0 means 1). Run i
	// (0-based) of a mixer trains with train.seed + i, which sets its
	// initial weights and its data order; the task's own seed, and so the
	// data, stays the same. Tables give the mean and the range over them.
	Seeds int `json:"seeds,omitempty"`
	// Jobs > 1 trains that many mixers at once, each in its own worker
	// process with threads/Jobs threads (at least 1); the speed columns are
	// then per worker, next to a neighbour. Whether that trains more tokens
	// per second in total depends on how well a mixer uses 2 threads (see
	// docs/presets.md). In-process arenas run one mixer at a time.
	Jobs int `json:"jobs,omitempty"`
	// Mixers lists the kinds to run, in order; empty means every registered
	// kind.
	Mixers []string `json:"mixers,omitempty"`
	// MixerOptions maps a kind to its options. The string value "sqrt_len"
	// stands for round(√T) with T the task's sequence length. Options of a
	// kind that is not run are ignored.
	MixerOptions map[string]map[string]any `json:"mixer_options,omitempty"`
	// TestExamples caps the test examples evaluated (0 = the whole split).
	TestExamples int `json:"test_examples,omitempty"`
	// Skip maps a kind to the reason it is not run (say, "over the time
	// budget: 119 s per step in the pace run"); the table lists the kind
	// with that reason.
	Skip map[string]string `json:"skip,omitempty"`
	// MaxTrainTime, a duration, caps each run's training time: a run that
	// has not finished its step budget by then stops there, and its note
	// says so (over the time budget). It keeps a preset within its wall
	// time at lengths where a mixer is slower than its budget assumed.
	MaxTrainTime string `json:"max_train_time,omitempty"`
	// Lens makes the arena a length sweep: every mixer runs at each of
	// these sequence lengths (TaskSpec.Len sets the task's keys), each
	// (mixer, length) a run of its own named <kind>.len<T>. An entry may
	// set its own task keys, budget, mixer_steps, test_examples,
	// max_train_time, batch_size and skip. Empty: one length, the task's
	// own.
	Lens []LenSection `json:"lens,omitempty"`
	// Bucket > 1 batches training examples of similar length together
	// (data.Loader.Bucket: runs of Bucket batches sorted by length), and
	// evaluates a whole split in order of length: less padding for tasks of
	// variable length. Order of batches stays seeded and resumable.
	Bucket int `json:"bucket,omitempty"`
}

// LenSection is one length of a sweep (Preset.Lens): the length, and what
// differs there from the preset's top-level keys (left out: the same).
type LenSection struct {
	Len int `json:"len"`
	// Task holds task keys set at this length only, over the task's own
	// and the length's (gosrc's eval_context, say).
	Task         map[string]strict.RawMessage `json:"task,omitempty"`
	Budget       string                       `json:"budget,omitempty"`
	MixerSteps   map[string]int               `json:"mixer_steps,omitempty"`
	TestExamples int                          `json:"test_examples,omitempty"`
	MaxTrainTime string                       `json:"max_train_time,omitempty"`
	BatchSize    int                          `json:"batch_size,omitempty"`
	Skip         map[string]string            `json:"skip,omitempty"`
}

// TaskSection is the preset's "task" object: the task's name and its own
// keys, kept as written; the task reads them strictly when it is built
// (BuildTask), naming them task.<key>.
type TaskSection struct {
	Name string
	Keys map[string]strict.RawMessage
}

// UnmarshalStrict reads the task object: "name" is a non-empty string.
func (t *TaskSection) UnmarshalStrict(o *strict.Object) error {
	t.Keys = map[string]strict.RawMessage{}
	for _, k := range o.Keys() {
		if k != "name" {
			t.Keys[k], _ = o.Raw(k)
		}
	}
	o.String("name", &t.Name)
	if err := o.Err(); err != nil {
		return err
	}
	if t.Name == "" {
		return fmt.Errorf("task.name: want one of %s", strings.Join(data.TaskNames(), ", "))
	}
	return nil
}

// MarshalJSON writes the task object: "name" and the task's keys.
func (t TaskSection) MarshalJSON() ([]byte, error) {
	m := make(map[string]strict.RawMessage, len(t.Keys)+1)
	for k, v := range t.Keys {
		m[k] = v
	}
	nb, err := strict.Marshal(t.Name)
	if err != nil {
		return nil, err
	}
	m["name"] = nb
	return strict.Marshal(m)
}

// ModelSection is the preset's "model" object: the model-contract keys the
// arena does not derive from the task or the mixer (see docs/model.md).
// A nil pointer is a key left out: the contract's default.
type ModelSection struct {
	DModel     int      `json:"d_model,omitempty"`
	NHeads     int      `json:"n_heads,omitempty"`
	NLayers    int      `json:"n_layers,omitempty"`
	DFF        int      `json:"d_ff,omitempty"`
	Causal     *bool    `json:"causal,omitempty"`
	Checkpoint *bool    `json:"checkpoint,omitempty"`
	FFChunks   *int     `json:"ff_chunks,omitempty"`
	Reversible *bool    `json:"reversible,omitempty"`
	Precision  *string  `json:"precision,omitempty"`
	Dropout    *float64 `json:"dropout,omitempty"`
	Pool       *string  `json:"pool,omitempty"`
}

// derivedModelKeys are set by the arena from the task and the mixer.
var derivedModelKeys = []string{"vocab_size", "max_len", "task", "n_classes", "pad_id", "mixer", "train"}

// UnmarshalStrict reads the model object; a key the arena derives is an
// error naming it.
func (m *ModelSection) UnmarshalStrict(o *strict.Object) error {
	for _, k := range derivedModelKeys {
		if _, ok := o.Raw(k); ok {
			o.Fail(k, "set by the arena from the task; remove it")
			return nil
		}
	}
	return o.Fields(m)
}

// TrainSection is the preset's "train" object: the model contract's
// "train" keys but steps (from the budget) and seq_len (the task's
// length). A nil pointer is a key left out: the contract's default.
type TrainSection struct {
	BatchSize       *int     `json:"batch_size,omitempty"`
	LR              *float64 `json:"lr,omitempty"`
	MinLR           *float64 `json:"min_lr,omitempty"`
	Warmup          *int     `json:"warmup,omitempty"`
	WeightDecay     *float64 `json:"weight_decay,omitempty"`
	GradClip        *float64 `json:"grad_clip,omitempty"`
	Beta1           *float64 `json:"beta1,omitempty"`
	Beta2           *float64 `json:"beta2,omitempty"`
	Eps             *float64 `json:"eps,omitempty"`
	Seed            *int64   `json:"seed,omitempty"`
	LogEvery        *int     `json:"log_every,omitempty"`
	EvalEvery       *int     `json:"eval_every,omitempty"`
	EvalBatches     *int     `json:"eval_batches,omitempty"`
	CheckpointEvery *int     `json:"checkpoint_every,omitempty"`
	KeepCheckpoints *int     `json:"keep_checkpoints,omitempty"`
	LabelSmoothing  *float64 `json:"label_smoothing,omitempty"`
	Schedule        *string  `json:"schedule,omitempty"`
	// Pretrain is a self-pretraining stage run before every mixer's
	// fine-tuning (the model contract's train.pretrain); nil: none.
	Pretrain *PretrainSection `json:"pretrain,omitempty"`
	// Curriculum is a length curriculum run by every mixer (the model
	// contract's train.curriculum): its stages' updates count in each
	// mixer's steps. Every length of a sweep must exceed its last len.
	Curriculum []CurriculumSection `json:"curriculum,omitempty"`
}

// CurriculumSection is one stage of the preset's train.curriculum: the
// contract's keys.
type CurriculumSection struct {
	Len       int  `json:"len"`
	Steps     int  `json:"steps"`
	BatchSize *int `json:"batch_size,omitempty"`
}

// PretrainSection is the preset's train.pretrain object: the contract's
// keys but objective and mask_id, which the arena sets per run: "mlm" for
// a bidirectional run, with mask_id the task's vocabulary size (one id
// above the task's, so vocab_size grows by one), and "lm" for a causal
// run. A nil pointer is a key left out: the contract's default.
type PretrainSection struct {
	Steps    int      `json:"steps"`
	MaskRate *float64 `json:"mask_rate,omitempty"`
	LR       *float64 `json:"lr,omitempty"`
	MinLR    *float64 `json:"min_lr,omitempty"`
	Warmup   *int     `json:"warmup,omitempty"`
}

// UnmarshalStrict reads the pretrain object; objective and mask_id are
// errors naming them.
func (t *PretrainSection) UnmarshalStrict(o *strict.Object) error {
	for _, k := range []string{"objective", "mask_id"} {
		if _, ok := o.Raw(k); ok {
			o.Fail(k, "set by the arena (mlm with a mask id above the task's vocabulary for bidirectional runs, lm for causal ones); remove it")
			return nil
		}
	}
	if _, ok := o.Peek("steps"); !ok {
		o.Fail("steps", "required")
		return nil
	}
	return o.Fields(t)
}

// UnmarshalStrict reads the train object; steps and seq_len are errors
// naming them, and so is a negative seed.
func (t *TrainSection) UnmarshalStrict(o *strict.Object) error {
	for _, k := range []string{"steps", "seq_len"} {
		if _, ok := o.Raw(k); ok {
			o.Fail(k, "set by the arena (budget, task); remove it")
			return nil
		}
	}
	if err := o.Fields(t); err != nil {
		return err
	}
	if t.Seed != nil && *t.Seed < 0 {
		o.Fail("seed", "want a non-negative integer, got %d", *t.Seed)
	}
	return nil
}

// config returns the model contract's train config: the defaults
// (model.DefaultTrainConfig of c), the keys the preset sets, steps and
// seed.
func (t *TrainSection) config(c *model.Config, steps int, seed uint64) *model.TrainConfig {
	tc := model.DefaultTrainConfig(c)
	set(&tc.BatchSize, t.BatchSize)
	set(&tc.LR, t.LR)
	set(&tc.MinLR, t.MinLR)
	set(&tc.Warmup, t.Warmup)
	set(&tc.WeightDecay, t.WeightDecay)
	set(&tc.GradClip, t.GradClip)
	set(&tc.Beta1, t.Beta1)
	set(&tc.Beta2, t.Beta2)
	set(&tc.Eps, t.Eps)
	set(&tc.LogEvery, t.LogEvery)
	set(&tc.EvalEvery, t.EvalEvery)
	set(&tc.EvalBatches, t.EvalBatches)
	set(&tc.CheckpointEvery, t.CheckpointEvery)
	set(&tc.KeepCheckpoints, t.KeepCheckpoints)
	set(&tc.LabelSmoothing, t.LabelSmoothing)
	set(&tc.Schedule, t.Schedule)
	tc.Steps, tc.Seed = steps, seed
	for _, cs := range t.Curriculum {
		st := model.CurriculumStage{Len: cs.Len, Steps: cs.Steps, BatchSize: tc.BatchSize}
		set(&st.BatchSize, cs.BatchSize)
		tc.Curriculum = append(tc.Curriculum, st)
	}
	if pt := t.Pretrain; pt != nil {
		pc := &model.PretrainConfig{Objective: model.ObjectiveLM, Steps: pt.Steps, MaskID: -1, LR: tc.LR, MinLR: tc.MinLR, Warmup: tc.Warmup}
		if !c.Causal {
			// The mask token is the id after the task's vocabulary.
			pc.Objective, pc.MaskRate, pc.MaskID = model.ObjectiveMLM, model.DefaultMaskRate, c.VocabSize
			c.VocabSize++
		}
		set(&pc.MaskRate, pt.MaskRate)
		set(&pc.LR, pt.LR)
		set(&pc.MinLR, pt.MinLR)
		set(&pc.Warmup, pt.Warmup)
		tc.Pretrain = pc
	}
	return tc
}

// set copies *v into *dst when v is not nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Budget is a parsed budget: Steps > 0, or a Duration > 0.
type Budget struct {
	Steps    int
	Duration time.Duration
}

func (b Budget) String() string {
	if b.Steps > 0 {
		return strconv.Itoa(b.Steps) + " steps"
	}
	return b.Duration.String()
}

// ParseBudget parses "STEPS" or a Go duration.
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return Budget{}, fmt.Errorf("budget: want ≥ 1 step, got %d", n)
		}
		return Budget{Steps: n}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Budget{}, fmt.Errorf("budget: want a step count or a positive duration such as 90s, got %q", s)
	}
	return Budget{Duration: d}, nil
}

// MaxSeeds is the most seeds per mixer a preset may ask for.
const MaxSeeds = 100

// NumSeeds is the number of training seeds per mixer: Seeds, at least 1.
func (p *Preset) NumSeeds() int { return max(p.Seeds, 1) }

// baseSeed returns train.seed (0 when absent), the seed of each mixer's
// first run.
func (p *Preset) baseSeed() uint64 {
	if p.Train.Seed == nil {
		return 0
	}
	return uint64(*p.Train.Seed)
}

// Seed returns the training seed of run i (0-based) of each mixer:
// train.seed + i.
func (p *Preset) Seed(i int) uint64 { return p.baseSeed() + uint64(i) }

// BudgetFor returns kind's budget: its MixerSteps entry, else Budget.
func (p *Preset) BudgetFor(kind string) (Budget, error) {
	if n, ok := p.MixerSteps[kind]; ok {
		return Budget{Steps: n}, nil
	}
	return ParseBudget(p.Budget)
}

// BudgetSummary describes the budgets in a few words, e.g. "876–2903 steps
// per mixer (mixer_steps), 1200 for any other" or "45s per mixer, 8m in
// all"; a sweep's per length.
func (p *Preset) BudgetSummary() string {
	if p.Sweep() {
		var parts []string
		for _, l := range p.Lens {
			q, err := p.AtLen(l)
			if err != nil {
				return err.Error()
			}
			parts = append(parts, fmt.Sprintf("T = %d: %s", l.Len, q.BudgetSummary()))
		}
		return strings.Join(parts, "; ")
	}
	one := p.Budget
	if b, err := ParseBudget(p.Budget); err == nil {
		one = b.String()
	}
	s := one + " per mixer"
	if len(p.MixerSteps) > 0 {
		lo, hi := math.MaxInt, 0
		for _, n := range p.MixerSteps {
			lo, hi = min(lo, n), max(hi, n)
		}
		s = fmt.Sprintf("%d–%d steps per mixer (mixer_steps), %s for any other", lo, hi, one)
	}
	if p.TotalBudget != "" {
		s += ", " + p.TotalBudget + " in all"
	}
	return s
}

// SetBudget makes budget (a step count or a duration) every mixer's budget
// at every length, dropping MixerSteps, TotalBudget and the lengths' own
// budgets.
func (p *Preset) SetBudget(budget string) error {
	if _, err := ParseBudget(budget); err != nil {
		return err
	}
	p.Budget, p.MixerSteps, p.TotalBudget = budget, nil, ""
	for i := range p.Lens {
		p.Lens[i].Budget, p.Lens[i].MixerSteps = "", nil
	}
	return nil
}

// Sweep reports whether the preset is a length sweep (Lens is not empty).
func (p *Preset) Sweep() bool { return len(p.Lens) > 0 }

// SetLens makes the preset a sweep over ns, in that order, keeping the
// settings of lengths it already lists; it checks each length against the
// task (SetLen).
func (p *Preset) SetLens(ns []int) error {
	old := map[int]LenSection{}
	for _, l := range p.Lens {
		old[l.Len] = l
	}
	seen := map[int]bool{}
	var ls []LenSection
	for _, n := range ns {
		switch {
		case n < 1:
			return fmt.Errorf("--len: want lengths ≥ 1, got %d", n)
		case seen[n]:
			return fmt.Errorf("--len: %d is listed twice", n)
		}
		seen[n] = true
		l, ok := old[n]
		if !ok {
			l = LenSection{Len: n}
		}
		if _, err := p.AtLen(l); err != nil {
			return err
		}
		ls = append(ls, l)
	}
	p.Lens = ls
	return nil
}

// AtLen returns the single-length preset of sweep entry l: the task at
// length l.Len, and l's settings in place of the top-level ones it sets.
func (p *Preset) AtLen(l LenSection) (*Preset, error) {
	q := *p
	q.Lens = nil
	if err := q.SetLen(l.Len); err != nil {
		return nil, err
	}
	if len(l.Task) > 0 {
		kv := make(map[string]any, len(l.Task))
		for k, v := range l.Task {
			kv[k] = v
		}
		if err := q.SetTask("", kv); err != nil {
			return nil, err
		}
	}
	if l.Budget != "" {
		q.Budget, q.MixerSteps, q.TotalBudget = l.Budget, nil, ""
	}
	if l.MixerSteps != nil {
		q.MixerSteps = l.MixerSteps
	}
	if l.TestExamples > 0 {
		q.TestExamples = l.TestExamples
	}
	if l.MaxTrainTime != "" {
		q.MaxTrainTime = l.MaxTrainTime
	}
	if l.BatchSize > 0 {
		bs := l.BatchSize
		q.Train.BatchSize = &bs
	}
	if l.Skip != nil {
		q.Skip = l.Skip
	}
	return &q, nil
}

// LenPresets returns the preset of each length of the sweep, in order, or
// the preset itself when it is not a sweep.
func (p *Preset) LenPresets() ([]*Preset, error) {
	if !p.Sweep() {
		return []*Preset{p}, nil
	}
	var qs []*Preset
	for _, l := range p.Lens {
		q, err := p.AtLen(l)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// maxTrainTime is MaxTrainTime parsed (0 when absent).
func (p *Preset) maxTrainTime() time.Duration {
	d, _ := time.ParseDuration(p.MaxTrainTime)
	return d
}

// ErrUnknownPreset is returned (wrapped) by LoadPreset for a name that is
// neither a file nor a built-in preset.
var ErrUnknownPreset = errors.New("unknown preset")

// PresetNames lists the built-in presets.
func PresetNames() []string { return configs.Names() }

// LoadPreset reads a preset: name is a file path, or the name of a built-in
// preset (PresetNames, e.g. "recall", "listops").
func LoadPreset(name string) (*Preset, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		var err2 error
		b, err2 = configs.FS.ReadFile(strings.TrimSuffix(name, ".json") + ".json")
		if err2 != nil {
			return nil, fmt.Errorf("%w %q: not a file (%v) nor a built-in preset (%s)", ErrUnknownPreset, name, err, strings.Join(configs.Names(), ", "))
		}
	}
	p, err := ParsePreset(b)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	return p, nil
}

// ParsePreset parses a preset strictly: its keys, and those of its model
// and train objects (the task's own keys are read when it is built).
func ParsePreset(b []byte) (*Preset, error) {
	p := &Preset{}
	if err := strict.Struct("", b, p); err != nil {
		return nil, err
	}
	if _, err := ParseBudget(p.Budget); err != nil {
		return nil, err
	}
	if p.Jobs < 0 {
		return nil, fmt.Errorf("jobs: want ≥ 0, got %d", p.Jobs)
	}
	if p.Seeds < 0 || p.Seeds > MaxSeeds {
		return nil, fmt.Errorf("seeds: want 0–%d, got %d", MaxSeeds, p.Seeds)
	}
	if p.Time != "" {
		if d, err := time.ParseDuration(p.Time); err != nil || d <= 0 {
			return nil, fmt.Errorf("time: want a positive duration, got %q", p.Time)
		}
	}
	if err := CheckMixers(p.Mixers); err != nil {
		return nil, err
	}
	if p.TotalBudget != "" {
		if d, err := time.ParseDuration(p.TotalBudget); err != nil || d <= 0 {
			return nil, fmt.Errorf("total_budget: want a positive duration, got %q", p.TotalBudget)
		}
	}
	if err := checkMixerSteps("mixer_steps", p.MixerSteps); err != nil {
		return nil, err
	}
	if err := checkSkip("skip", p.Skip); err != nil {
		return nil, err
	}
	if err := checkDuration("max_train_time", p.MaxTrainTime); err != nil {
		return nil, err
	}
	if p.TestExamples < 0 {
		return nil, fmt.Errorf("test_examples: want ≥ 0, got %d", p.TestExamples)
	}
	seen := map[int]bool{}
	for i, l := range p.Lens {
		at := fmt.Sprintf("lens[%d].", i)
		switch {
		case l.Len < 1:
			return nil, fmt.Errorf("%slen: want ≥ 1, got %d", at, l.Len)
		case seen[l.Len]:
			return nil, fmt.Errorf("%slen: %d is listed twice", at, l.Len)
		case l.TestExamples < 0:
			return nil, fmt.Errorf("%stest_examples: want ≥ 0, got %d", at, l.TestExamples)
		case l.BatchSize < 0:
			return nil, fmt.Errorf("%sbatch_size: want ≥ 1, got %d", at, l.BatchSize)
		}
		if _, ok := l.Task["name"]; ok {
			return nil, fmt.Errorf("%stask.name: a length cannot change the task; remove it", at)
		}
		seen[l.Len] = true
		if l.Budget != "" {
			if _, err := ParseBudget(l.Budget); err != nil {
				return nil, fmt.Errorf("%s%w", at, err)
			}
		}
		if err := checkMixerSteps(at+"mixer_steps", l.MixerSteps); err != nil {
			return nil, err
		}
		if err := checkDuration(at+"max_train_time", l.MaxTrainTime); err != nil {
			return nil, err
		}
		if err := checkSkip(at+"skip", l.Skip); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkMixerSteps returns an error naming key for an unknown kind or a
// step count below 1.
func checkMixerSteps(key string, steps map[string]int) error {
	for _, k := range sortedKeys(steps) {
		if _, err := registry.Lookup(k); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if n := steps[k]; n < 1 {
			return fmt.Errorf("%s.%s: want ≥ 1 step, got %d", key, k, n)
		}
	}
	return nil
}

// checkSkip returns an error naming key for an unknown kind or an empty
// reason.
func checkSkip(key string, skip map[string]string) error {
	for _, k := range sortedKeys(skip) {
		if _, err := registry.Lookup(k); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if strings.TrimSpace(skip[k]) == "" {
			return fmt.Errorf("%s.%s: want the reason the kind is not run", key, k)
		}
	}
	return nil
}

// checkDuration returns an error naming key unless s is empty or a
// positive duration.
func checkDuration(key, s string) error {
	if s == "" {
		return nil
	}
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		return fmt.Errorf("%s: want a positive duration such as 10m, got %q", key, s)
	}
	return nil
}

// UnmarshalStrict reads a preset's keys; task, model and budget are
// required.
func (p *Preset) UnmarshalStrict(o *strict.Object) error {
	if err := o.Fields(p); err != nil {
		return err
	}
	for _, k := range []string{"task", "model", "budget"} {
		if _, ok := o.Peek(k); !ok {
			return fmt.Errorf("%s: required", k)
		}
	}
	return nil
}

// CheckMixers returns an error naming the first name in names that is not a
// registered mixer kind.
func CheckMixers(names []string) error {
	for _, n := range names {
		if _, err := registry.Lookup(n); err != nil {
			return fmt.Errorf("mixers: %w", err)
		}
	}
	return nil
}

// TaskName is the preset's task name.
func (p *Preset) TaskName() string { return p.Task.Name }

// SetTask replaces the task object's keys: name (if not empty) and kv
// (overriding keys of the same name).
func (p *Preset) SetTask(name string, kv map[string]any) error {
	m := map[string]strict.RawMessage{}
	if name == "" || name == p.Task.Name {
		for k, v := range p.Task.Keys {
			m[k] = v
		}
		name = p.Task.Name
	} // another task: its keys do not carry over
	for k, v := range kv {
		b, err := strict.Marshal(v)
		if err != nil {
			return fmt.Errorf("task.%s: %v", k, err)
		}
		m[k] = b
	}
	p.Task = TaskSection{Name: name, Keys: m}
	return nil
}

// SetPrecision sets the model's precision ("fp32", "bf16" or "fp16") for
// every mixer, or returns an error naming the value.
func (p *Preset) SetPrecision(prec string) error {
	var c model.Config
	if err := c.SetPrecision(prec); err != nil {
		return err
	}
	p.Model.Precision = &prec
	return nil
}

// SetLen overrides the task's sequence length with the keys of its entry
// in the task list (data.TaskSpec.Len): recall's len, gosrc's seq_len, or
// ListOps's max_len (with min_len = max_len/4, LRA's ratio). It returns an
// error for fmnist, whose length is fixed at 784.
func (p *Preset) SetLen(n int) error {
	name := p.TaskName()
	if spec, err := data.LookupTask(name); err == nil && spec.Len != nil {
		if kv := spec.Len(n); kv != nil {
			return p.SetTask("", kv)
		}
	}
	return fmt.Errorf("--len: task %s has a fixed length", name)
}

// BuildTaskAtLen constructs the preset's task at sequence length n (a
// length curriculum's stage; data.NewTaskAtLen).
func (p *Preset) BuildTaskAtLen(n int) (data.Task, error) {
	return data.NewTaskAtLen(p.Task.Name, p.Task.Keys, n, "")
}

// BuildTask constructs the preset's task.
func (p *Preset) BuildTask() (data.Task, error) { return p.BuildTaskCached("") }

// BuildTaskCached is BuildTask with generated data cached in dir (when not
// empty): ListOps is generated once per arena and loaded by every worker
// (data.NewTask).
func (p *Preset) BuildTaskCached(dir string) (data.Task, error) {
	return data.NewTask(p.Task.Name, p.Task.Keys, dir)
}

// ModelConfig returns the model config of mixer kind's first run (seed
// Seed(0)): the preset's model and train objects, kind's options
// (MixerOpts), the task's sizes, causal mode and a training run of steps
// updates. It is checked by model.Config.Resolve; its errors name the
// preset's keys (model.d_model, train.lr, mixer_options.lsh.bucket_size).
func (p *Preset) ModelConfig(kind string, info data.Info, causal bool, steps int) (*model.Config, error) {
	return p.modelConfig(kind, info, causal, steps, 0)
}

// ModelJSON is ModelConfig written as the model contract's JSON.
func (p *Preset) ModelJSON(kind string, info data.Info, causal bool, steps int) ([]byte, error) {
	c, err := p.ModelConfig(kind, info, causal, steps)
	if err != nil {
		return nil, err
	}
	return strict.MarshalIndent(c)
}

// modelConfig is ModelConfig for run seedIndex of the mixer: its
// train.seed is Seed(seedIndex).
func (p *Preset) modelConfig(kind string, info data.Info, causal bool, steps, seedIndex int) (*model.Config, error) {
	m := p.Model
	c := &model.Config{VocabSize: info.Vocab, DModel: m.DModel, NHeads: m.NHeads, NLayers: m.NLayers, DFF: m.DFF,
		MaxLen: info.MaxLen, Causal: causal, Task: string(info.Mode), FFChunks: 1}
	if info.Mode != data.LM {
		c.NClasses = info.Classes
	}
	if info.PadID >= 0 {
		pad := info.PadID
		c.PadID = &pad
	}
	set(&c.Checkpoint, m.Checkpoint)
	set(&c.FFChunks, m.FFChunks)
	set(&c.Reversible, m.Reversible)
	set(&c.Precision, m.Precision)
	set(&c.Dropout, m.Dropout)
	set(&c.Pool, m.Pool)
	opts, err := p.MixerOpts(kind, info.MaxLen)
	if err != nil {
		return nil, err
	}
	if c.Mixer, err = mixerOptions(kind, opts); err != nil {
		return nil, err
	}
	c.Train = p.Train.config(c, steps, p.Seed(seedIndex))
	if err := c.Resolve(); err != nil {
		return nil, presetKey(err, kind)
	}
	return c, nil
}

// mixerOptions is kind's mixer.Options from opts.
func mixerOptions(kind string, opts map[string]any) (mixer.Options, error) {
	raw := make(map[string]strict.RawMessage, len(opts))
	for k, v := range opts {
		b, err := strict.Marshal(v)
		if err != nil {
			return mixer.Options{}, fmt.Errorf("mixer_options.%s.%s: %v", kind, k, err)
		}
		raw[k] = b
	}
	return mixer.NewOptions(kind, raw), nil
}

// modelKeys are the keys of ModelSection, by their json tags.
var modelKeys = func() map[string]bool {
	t := reflect.TypeFor[ModelSection]()
	keys := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[k] = true
	}
	return keys
}()

// presetKey renames the key that begins a model config error by its place
// in the preset: a key of the model object as model.<key>, a mixer option
// as mixer_options.<kind>.<key>. train.<key> is the preset's name already.
func presetKey(err error, kind string) error {
	key, rest, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return err
	}
	if modelKeys[key] {
		return fmt.Errorf("model.%w", err)
	}
	if strings.HasPrefix(key, "mixer.") && key != "mixer.kind" {
		return fmt.Errorf("%s: %s", strings.ReplaceAll(key, "mixer.", "mixer_options."+kind+"."), rest)
	}
	return err
}

// MixerOpts returns kind's options from MixerOptions with "sqrt_len"
// replaced by round(√t).
func (p *Preset) MixerOpts(kind string, t int) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range p.MixerOptions[kind] {
		if s, ok := v.(string); ok && s == "sqrt_len" {
			v = int(math.Round(math.Sqrt(float64(t))))
		}
		out[k] = v
	}
	if _, ok := out["kind"]; ok {
		return nil, fmt.Errorf("mixer_options.%s.kind: not allowed", kind)
	}
	return out, nil
}

// Causal reports whether the model is causal: the task needs it (gosrc),
// or model.causal says so.
func (p *Preset) Causal(info data.Info) (bool, error) {
	c := p.Model.Causal
	if info.Causal {
		if c != nil && !*c {
			return false, fmt.Errorf("model.causal: task %s needs a causal model", info.Name)
		}
		return true, nil
	}
	return c != nil && *c, nil
}

// Canonical returns the preset as indented JSON with sorted keys, for saving
// with the results and for comparing on resume; nil if the preset holds a
// value JSON cannot (set from Go, such as a NaN).
func (p *Preset) Canonical() []byte {
	b, _ := strict.Canonical(p)
	return b
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
