package arena

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/strict"
)

// Run statuses.
const (
	StatusDone    = "done"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// CurvePoint is one point of a run's learning curve. At steps without
// validation HasVal is false and ValLoss and Val are zero (omitted in JSON).
type CurvePoint struct {
	Step int `json:"step"`
	// TrainS is the training time spent up to this step (0 in files
	// written before it was logged: then Step·ms_per_step stands in).
	TrainS    float64 `json:"train_s,omitempty"`
	TrainLoss float64 `json:"train_loss"`
	ValLoss   float64 `json:"val_loss,omitempty"`
	Val       float64 `json:"val,omitempty"`
	HasVal    bool    `json:"has_val,omitempty"`
}

// Result is one run: a mixer with one seed.
type Result struct {
	Mixer string `json:"mixer"`
	// Len is the run's sequence length, the task's longest (0 in files
	// written before length sweeps).
	Len int `json:"len"`
	// Seed is the training seed (train.seed of the run's config).
	Seed    uint64         `json:"seed"`
	Status  string         `json:"status"`
	Note    string         `json:"note,omitempty"`
	Options map[string]any `json:"options,omitempty"`
	Causal  bool           `json:"causal"`
	Params  int            `json:"params"`
	Metric  data.Metric    `json:"metric"`
	// Test is the test metric; TestLoss the mean test cross-entropy (nats).
	Test     float64 `json:"test"`
	TestLoss float64 `json:"test_loss"`
	// TestStdErr is Test's standard error (data.Eval.StdErr) over
	// TestTargets scored targets; 0 in older files.
	TestStdErr  float64 `json:"test_stderr,omitempty"`
	TestTargets int     `json:"test_targets,omitempty"`
	// Val is the validation metric at the end of training.
	Val float64 `json:"val"`
	// Steps and PlannedSteps count the fine-tuning updates; PretrainSteps
	// the updates of the preset's pretraining stage before them (0
	// without one).
	Steps         int     `json:"steps"`
	PlannedSteps  int     `json:"planned_steps"`
	PretrainSteps int     `json:"pretrain_steps,omitempty"`
	TrainTokens   int64   `json:"train_tokens"`
	TrainSeconds  float64 `json:"train_s"`
	TokensPerSec  float64 `json:"tokens_per_s"`
	MsPerStep     float64 `json:"ms_per_step"`
	// PlannedBytes is the run's memory plan at the longest batch (model.TrainNeed):
	// activations and activation gradients plus parameters, gradients and
	// AdamW moments, and the checkpoint save's buffers. PeakBytes is the process's peak RSS (VmHWM) when the
	// run had a process of its own, else 0.
	PlannedBytes int64        `json:"planned_bytes"`
	PeakBytes    int64        `json:"peak_rss_bytes"`
	WallSeconds  float64      `json:"wall_s"`
	Threads      int          `json:"threads"`
	Curve        []CurvePoint `json:"curve,omitempty"`
}

// File is what results.json holds. With the preset, the seeds, the thread
// count and the kernel paths it records everything a run's figures depend
// on; files written by older builds lack Seeds, CPU, Kernels, BF16Kernels,
// Threads and Jobs (zero values) and have one run per mixer.
type File struct {
	Task      data.Info         `json:"task"`
	Preset    strict.RawMessage `json:"preset"`
	Budget    string            `json:"budget"`
	Baselines []data.Baseline   `json:"baselines,omitempty"`
	// Seeds are the training seeds of each mixer's runs, in run order.
	Seeds   []uint64 `json:"seeds,omitempty"`
	Results []Result `json:"results"`
	// Machine sums up the fields below and the OS, architecture and Go
	// version in one line.
	Machine string `json:"machine"`
	// CPU is the CPU's model name ("" when the OS does not say).
	CPU string `json:"cpu,omitempty"`
	// Kernels is the float32 kernel path (kernels.CurrentPath: "go",
	// "avx2", "avx512"); BF16Kernels the bf16 GEMM path (kernels.BF16Path).
	Kernels     string `json:"kernels,omitempty"`
	BF16Kernels string `json:"bf16_kernels,omitempty"`
	// Threads is each run's thread count; Jobs the runs trained at once.
	Threads int `json:"threads,omitempty"`
	Jobs    int `json:"jobs,omitempty"`
	// Lens are a length sweep's sequence lengths, in order (absent for an
	// arena at the task's own length).
	Lens []int `json:"lens,omitempty"`
	// MaxMemory is the memory budget each run's plan was checked against
	// (0: none).
	MaxMemory int64  `json:"max_memory,omitempty"`
	Version   string `json:"version"` // of the build that wrote the file
}

// writeJSON writes v to path as indented JSON, through a temporary file.
func writeJSON(path string, v any) error {
	b, err := strict.MarshalIndent(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readJSON decodes the JSON file at path into the struct *v strictly
// (strict.Struct); errors name the file and the key.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := strict.Struct("", b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// csvHeader is the column list of results.csv.
var csvHeader = []string{"mixer", "seed", "status", "metric", "test", "test_loss", "val", "params",
	"steps", "train_tokens", "tokens_per_s", "ms_per_step", "planned_bytes", "peak_rss_bytes",
	"train_s", "wall_s", "threads", "causal", "note", "len", "test_stderr", "pretrain_steps"}

// WriteCSV writes one row per result.
func WriteCSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rs {
		cw.Write([]string{r.Mixer, strconv.FormatUint(r.Seed, 10), r.Status, string(r.Metric), f(r.Test), f(r.TestLoss), f(r.Val),
			strconv.Itoa(r.Params), strconv.Itoa(r.Steps), strconv.FormatInt(r.TrainTokens, 10),
			f(r.TokensPerSec), f(r.MsPerStep), strconv.FormatInt(r.PlannedBytes, 10),
			strconv.FormatInt(r.PeakBytes, 10), f(r.TrainSeconds), f(r.WallSeconds),
			strconv.Itoa(r.Threads), strconv.FormatBool(r.Causal), r.Note, strconv.Itoa(r.Len), f(r.TestStdErr),
			strconv.Itoa(r.PretrainSteps)})
	}
	cw.Flush()
	return cw.Error()
}

// FormatMetric formats a metric value: accuracy in percent, bits per byte
// with three decimals.
func FormatMetric(m data.Metric, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if m == data.Accuracy {
		return fmt.Sprintf("%.2f%%", 100*v)
	}
	return fmt.Sprintf("%.3f", v)
}

func formatCount(n int) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.Itoa(n)
}

func formatDuration(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%.1fs", s)
}

func mdEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

// runDir is where a run keeps its result and checkpoint.
func runDir(out, run string) string { return filepath.Join(out, "runs", run) }
