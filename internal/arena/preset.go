package arena

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/configs"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/strict"
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
	Task json.RawMessage `json:"task"`
	// Model holds the model-contract keys the arena does not derive from the
	// task: d_model, n_heads, n_layers, d_ff, and optionally causal,
	// checkpoint, ff_chunks, reversible, precision, dropout, pool.
	Model json.RawMessage `json:"model"`
	// Train is the model contract's "train" object (batch_size, lr, min_lr,
	// warmup, weight_decay, grad_clip, beta1, beta2, eps, seed, log_every,
	// eval_every, eval_batches, checkpoint_every); steps comes from Budget.
	Train json.RawMessage `json:"train,omitempty"`
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
	// Bucket > 1 batches training examples of similar length together
	// (data.Loader.Bucket: runs of Bucket batches sorted by length), and
	// evaluates a whole split in order of length: less padding for tasks of
	// variable length. Order of batches stays seeded and resumable.
	Bucket int `json:"bucket,omitempty"`
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
func (p *Preset) baseSeed() (uint64, error) {
	if len(p.Train) == 0 {
		return 0, nil
	}
	var tr map[string]json.RawMessage
	if err := json.Unmarshal(p.Train, &tr); err != nil {
		return 0, fmt.Errorf("train: %v", err)
	}
	b, ok := tr["seed"]
	if !ok {
		return 0, nil
	}
	var seed uint64
	if err := json.Unmarshal(b, &seed); err != nil {
		return 0, fmt.Errorf("train.seed: want a non-negative integer, got %s", b)
	}
	return seed, nil
}

// Seed returns the training seed of run i (0-based) of each mixer:
// train.seed + i. It returns an error if train.seed is not a non-negative
// integer.
func (p *Preset) Seed(i int) (uint64, error) {
	s, err := p.baseSeed()
	return s + uint64(i), err
}

// BudgetFor returns kind's budget: its MixerSteps entry, else Budget.
func (p *Preset) BudgetFor(kind string) (Budget, error) {
	if n, ok := p.MixerSteps[kind]; ok {
		return Budget{Steps: n}, nil
	}
	return ParseBudget(p.Budget)
}

// BudgetSummary describes the budgets in a few words, e.g. "876–2903 steps
// per mixer (mixer_steps), 1200 for any other" or "45s per mixer, 8m in
// all".
func (p *Preset) BudgetSummary() string {
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

// SetBudget makes budget (a step count or a duration) every mixer's budget,
// dropping MixerSteps and TotalBudget.
func (p *Preset) SetBudget(budget string) error {
	if _, err := ParseBudget(budget); err != nil {
		return err
	}
	p.Budget, p.MixerSteps, p.TotalBudget = budget, nil, ""
	return nil
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

// ParsePreset parses a preset strictly.
func ParsePreset(b []byte) (*Preset, error) {
	p := &Preset{}
	if err := strict.Struct("", b, p); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		key string
		ok  bool
	}{{"task", len(p.Task) > 0}, {"model", len(p.Model) > 0}, {"budget", p.Budget != ""}} {
		if !r.ok {
			return nil, fmt.Errorf("%s: required", r.key)
		}
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
	for _, k := range sortedKeys(p.MixerSteps) {
		if _, err := registry.Lookup(k); err != nil {
			return nil, fmt.Errorf("mixer_steps: %w", err)
		}
		if n := p.MixerSteps[k]; n < 1 {
			return nil, fmt.Errorf("mixer_steps.%s: want ≥ 1 step, got %d", k, n)
		}
	}
	if _, err := p.baseSeed(); err != nil {
		return nil, err
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
	if _, _, err := p.taskSpec(); err != nil {
		return nil, err
	}
	return p, nil
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

// taskSpec splits the task object into its name and the remaining keys.
func (p *Preset) taskSpec() (string, map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.Task, &m); err != nil {
		return "", nil, fmt.Errorf("task: %v", err)
	}
	var name string
	if err := json.Unmarshal(m["name"], &name); err != nil || name == "" {
		return "", nil, fmt.Errorf("task.name: want one of listops, fmnist, gosrc, recall")
	}
	delete(m, "name")
	return name, m, nil
}

// TaskName is the preset's task name.
func (p *Preset) TaskName() string {
	n, _, _ := p.taskSpec()
	return n
}

// SetTask replaces the task object's keys: name (if not empty) and kv
// (overriding keys of the same name).
func (p *Preset) SetTask(name string, kv map[string]any) error {
	old, m, err := p.taskSpec()
	if err != nil {
		return err
	}
	if name != "" && name != old {
		m = map[string]json.RawMessage{} // another task: its keys do not carry over
		old = name
	}
	for k, v := range kv {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	nb, _ := json.Marshal(old)
	m["name"] = nb
	p.Task, _ = json.Marshal(m)
	return nil
}

// SetPrecision sets the model's precision ("fp32", "bf16" or "fp16") for
// every mixer, or returns an error naming the value.
func (p *Preset) SetPrecision(prec string) error {
	switch prec {
	case "fp32", "bf16", "fp16":
	default:
		return fmt.Errorf("precision: must be \"fp32\", \"bf16\" or \"fp16\", got %q", prec)
	}
	m := map[string]json.RawMessage{}
	if len(p.Model) > 0 {
		if err := json.Unmarshal(p.Model, &m); err != nil {
			return fmt.Errorf("model: %v", err)
		}
	}
	m["precision"], _ = json.Marshal(prec)
	p.Model, _ = json.Marshal(m)
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

// BuildTask constructs the preset's task.
func (p *Preset) BuildTask() (data.Task, error) { return p.BuildTaskCached("") }

// BuildTaskCached is BuildTask with generated data cached in dir (when not
// empty): ListOps is generated once per arena and loaded by every worker
// (data.NewTask).
func (p *Preset) BuildTaskCached(dir string) (data.Task, error) {
	name, m, err := p.taskSpec()
	if err != nil {
		return nil, err
	}
	return data.NewTask(name, m, dir)
}

// derivedModelKeys are set by the arena from the task and the mixer.
var derivedModelKeys = []string{"vocab_size", "max_len", "task", "n_classes", "pad_id", "mixer", "train"}

// ModelJSON returns the model-contract config for mixer kind (with its
// options from MixerOptions, "sqrt_len" resolved), the task info, causal
// mode and a training run of steps updates with the first seed (Seed(0)).
func (p *Preset) ModelJSON(kind string, info data.Info, causal bool, steps int) ([]byte, error) {
	return p.modelJSON(kind, info, causal, steps, 0)
}

// modelJSON is ModelJSON for run seedIndex of the mixer: its train.seed is
// Seed(seedIndex).
func (p *Preset) modelJSON(kind string, info data.Info, causal bool, steps, seedIndex int) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.Model, &m); err != nil {
		return nil, fmt.Errorf("model: %v", err)
	}
	for _, k := range derivedModelKeys {
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("model.%s: set by the arena from the task; remove it", k)
		}
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	set("vocab_size", info.Vocab)
	set("max_len", info.MaxLen)
	set("causal", causal)
	set("task", string(info.Mode))
	if info.Mode == data.Classify {
		set("n_classes", info.Classes)
	}
	if info.PadID >= 0 {
		set("pad_id", info.PadID)
	}
	mix, err := p.MixerOpts(kind, info.MaxLen)
	if err != nil {
		return nil, err
	}
	mix["kind"] = kind
	set("mixer", mix)
	tr := map[string]json.RawMessage{}
	if len(p.Train) > 0 {
		if err := json.Unmarshal(p.Train, &tr); err != nil {
			return nil, fmt.Errorf("train: %v", err)
		}
	}
	for _, k := range []string{"steps", "seq_len"} {
		if _, ok := tr[k]; ok {
			return nil, fmt.Errorf("train.%s: set by the arena (budget, task); remove it", k)
		}
	}
	sb, _ := json.Marshal(steps)
	tr["steps"] = sb
	seed, err := p.Seed(seedIndex)
	if err != nil {
		return nil, err
	}
	sb, _ = json.Marshal(seed)
	tr["seed"] = sb
	tb, _ := json.Marshal(tr)
	m["train"] = tb
	return json.MarshalIndent(m, "", "  ")
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
	var m struct {
		Causal *bool `json:"causal"`
	}
	json.Unmarshal(p.Model, &m)
	if info.Causal {
		if m.Causal != nil && !*m.Causal {
			return false, fmt.Errorf("model.causal: task %s needs a causal model", info.Name)
		}
		return true, nil
	}
	return m.Causal != nil && *m.Causal, nil
}

// Canonical returns the preset as indented JSON with sorted keys, for saving
// with the results and for comparing on resume.
func (p *Preset) Canonical() []byte {
	b, _ := json.Marshal(p)
	var v any
	json.Unmarshal(b, &v)
	out, _ := json.MarshalIndent(v, "", "  ")
	return out
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
