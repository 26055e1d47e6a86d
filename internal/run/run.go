// Package run reads and writes tokenmix run directories, format 1, the one
// layout every command that trains writes and every reader loads
// (docs/model.md, "Run directory"):
//
//	DIR/config.json                      resolved model config, with "train"
//	DIR/run.json                         Info: format, task, label names, version, created
//	DIR/metrics.jsonl                    one object per logged step
//	DIR/ckpt/<step>/weights.safetensors  weights only, float32, the contract's names
//	DIR/ckpt/<step>/optim.safetensors    AdamW m and v
//	DIR/ckpt/<step>/state.json           State: step, data position, timing, version
//
// A checkpoint is written into DIR/ckpt/.tmp-<step>/, every file fsynced,
// then renamed to DIR/ckpt/<step>/ and the parent fsynced: a directory
// named by a step is always complete, and nothing is renamed over one.
// Readers take the highest step and ignore .tmp-* directories, which the
// next save removes.
package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/version"
)

// Format is the run directory format this package writes and reads.
const Format = 1

// File names inside a run directory and a checkpoint.
const (
	ConfigName  = "config.json"
	InfoName    = "run.json"
	MetricsName = "metrics.jsonl"
	CkptDir     = "ckpt"
	WeightsName = "weights.safetensors"
	OptimName   = "optim.safetensors"
	StateName   = "state.json"
	tmpPrefix   = ".tmp-"
)

// Info is run.json.
type Info struct {
	Format int `json:"format"`
	// Task is the model's task: "lm" or "classify".
	Task string `json:"task"`
	// LabelNames names the classes of a classifier, index by index; nil
	// when the classes have no names (and for lm).
	LabelNames []string `json:"label_names"`
	// Version is the build that created the run (internal/version).
	Version string `json:"version"`
	// Created is the creation time, RFC 3339.
	Created string `json:"created"`
}

// State is a checkpoint's state.json: what resuming needs besides the
// weights and the optimizer.
type State struct {
	// Step is the number of updates done.
	Step int `json:"step"`
	// PlannedSteps is the run's planned number of updates (the
	// learning-rate schedule's length) when the checkpoint was written.
	PlannedSteps int `json:"planned_steps"`
	// Data is the batch source's position and RNG state, as the source
	// spells it; null when the step alone determines it.
	Data json.RawMessage `json:"data"`
	// LossSum and LossSteps accumulate the training loss of the steps since
	// the last metrics line, whose mean the next line reports.
	LossSum   float64 `json:"loss_sum"`
	LossSteps int     `json:"loss_steps"`
	// Tokens trained on, training time (steps only) and wall time so far.
	Tokens       int64   `json:"tokens"`
	TrainSeconds float64 `json:"train_s"`
	WallSeconds  float64 `json:"wall_s"`
	// LossScale, LossScaleClean and Overflows are the dynamic loss scale
	// of precision "fp16" (model.LossScale: Scale, Clean, Skipped); absent
	// otherwise.
	LossScale      float64 `json:"loss_scale,omitempty"`
	LossScaleClean int     `json:"loss_scale_clean,omitempty"`
	Overflows      int     `json:"overflow_skips,omitempty"`
	// Checksums are the SHA-256 of the checkpoint's other files, by name
	// ("sha256:" and 64 hex digits), written by Save; absent in older
	// runs, whose checkpoints Verify cannot check.
	Checksums map[string]string `json:"checksums,omitempty"`
	// Stage is the training stage the checkpoint belongs to: StagePretrain
	// (its weights have the pretraining head, train.pretrain) or
	// StageTrain; absent (older runs) means StageTrain.
	Stage string `json:"stage,omitempty"`
	// StageStart is the run's step count when the stage began: the
	// updates of the pretraining stage in StageTrain after one, 0
	// otherwise (absent). The optimizer, the schedule (PlannedSteps),
	// Tokens and TrainSeconds count the stage's own updates from there.
	StageStart int `json:"stage_start,omitempty"`
	// Version is the build that wrote the checkpoint.
	Version string `json:"version"`
}

// Training stages, in State.Stage and in every metrics line's "stage".
const (
	StagePretrain = "pretrain"
	StageTrain    = "train"
)

// StageOf returns st's stage, StageTrain for a state without one.
func (st State) StageOf() string {
	if st.Stage == "" {
		return StageTrain
	}
	return st.Stage
}

// Dir is an open run directory.
type Dir struct {
	Path   string
	Config []byte // config.json as written
	Info   Info
}

// Create makes path a new run directory holding config (the resolved model
// config JSON) and run.json for info, whose Format, Version and Created it
// fills in. It fails if path already holds a run.
func Create(path string, config []byte, info Info) (*Dir, error) {
	if _, err := os.Stat(filepath.Join(path, InfoName)); err == nil {
		return nil, fmt.Errorf("%s already holds a run", path)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	info.Format, info.Version = Format, version.Get().String()
	info.Created = time.Now().UTC().Format(time.RFC3339)
	ib, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	// config.json first, then run.json under a temporary name renamed into
	// place: a directory with run.json is a complete run.
	if err := writeFileSync(filepath.Join(path, ConfigName), config); err != nil {
		return nil, err
	}
	tmp := filepath.Join(path, tmpPrefix+InfoName)
	if err := writeFileSync(tmp, append(ib, '\n')); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(path, InfoName)); err != nil {
		return nil, err
	}
	return &Dir{Path: path, Config: config, Info: info}, syncDir(path)
}

// Open reads the run directory at path. It returns an error naming the file
// when config.json or run.json is missing or malformed, or the format is
// not Format.
func Open(path string) (*Dir, error) {
	d := &Dir{Path: path}
	ib, err := os.ReadFile(filepath.Join(path, InfoName))
	if err != nil {
		return nil, fmt.Errorf("run: %w (not a run directory?)", err)
	}
	if err := json.Unmarshal(ib, &d.Info); err != nil {
		return nil, fmt.Errorf("run: %s: %v", filepath.Join(path, InfoName), err)
	}
	if d.Info.Format != Format {
		return nil, fmt.Errorf("run: %s: format %d, this build reads format %d", filepath.Join(path, InfoName), d.Info.Format, Format)
	}
	if d.Config, err = os.ReadFile(filepath.Join(path, ConfigName)); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return d, nil
}

// CkptPath is the directory of the checkpoint at step.
func (d *Dir) CkptPath(step int) string {
	return filepath.Join(d.Path, CkptDir, fmt.Sprintf("%08d", step))
}

// Checkpoints returns the steps of the complete checkpoints, ascending.
func (d *Dir) Checkpoints() ([]int, error) {
	es, err := os.ReadDir(filepath.Join(d.Path, CkptDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range es {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && n >= 0 {
			steps = append(steps, n)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// Latest returns the step of the newest complete checkpoint, or -1 when
// there is none.
func (d *Dir) Latest() (int, error) {
	steps, err := d.Checkpoints()
	if err != nil || len(steps) == 0 {
		return -1, err
	}
	return steps[len(steps)-1], nil
}

// ReadState reads state.json of the checkpoint at step.
func (d *Dir) ReadState(step int) (State, error) {
	var st State
	p := filepath.Join(d.CkptPath(step), StateName)
	b, err := os.ReadFile(p)
	if err != nil {
		return st, fmt.Errorf("run: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("run: %s: %v", p, err)
	}
	if st.Step != step {
		return st, fmt.Errorf("run: %s: step %d in a checkpoint named %d", p, st.Step, step)
	}
	if s := st.StageOf(); s != StagePretrain && s != StageTrain {
		return st, fmt.Errorf("run: %s: unknown stage %q (want %q or %q)", p, s, StagePretrain, StageTrain)
	}
	if st.StageStart < 0 || st.StageStart > st.Step {
		return st, fmt.Errorf("run: %s: stage_start %d outside [0, step %d]", p, st.StageStart, st.Step)
	}
	return st, nil
}

// checksum is the State.Checksums form of data's SHA-256.
func checksum(data []byte) string {
	h := sha256.Sum256(data)
	return sumString(h[:])
}

// sumString is the State.Checksums form of a SHA-256 sum.
func sumString(sum []byte) string { return "sha256:" + hex.EncodeToString(sum) }

// DamagedPrefix starts the name a damaged checkpoint is moved to
// (ckpt/damaged-<step>), where no reader looks for checkpoints.
const DamagedPrefix = "damaged-"

// Verify checks the checkpoint at step against the checksums its
// state.json records, every file's or, with only, those of the files
// named (a reader needs its weights, a resume every file): an error names
// the first file that is missing or whose bytes differ (a truncated or
// bit-flipped copy), or a state.json that does not parse. A checkpoint
// of an older run, without checksums, passes with checked false.
func (d *Dir) Verify(step int, only ...string) (checked bool, err error) {
	st, err := d.ReadState(step)
	if err != nil {
		return false, err
	}
	names := make([]string, 0, len(st.Checksums))
	for n := range st.Checksums {
		if len(only) == 0 || slices.Contains(only, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(d.CkptPath(step), n)
		got, size, err := fileChecksum(p)
		if err != nil {
			return true, fmt.Errorf("run: %s: damaged checkpoint: %v", p, err)
		}
		if got != st.Checksums[n] {
			return true, fmt.Errorf("run: %s: damaged checkpoint: its bytes do not match the %s state.json records (%d bytes, %s)", p, st.Checksums[n], size, got)
		}
	}
	return len(names) > 0, nil
}

// fileChecksum is checksum of the file at p, streamed (a model's weights
// are never held twice), and its size.
func fileChecksum(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return sumString(h.Sum(nil)), n, nil
}

// SetAside moves the checkpoint at step to ckpt/damaged-<step> (a later
// one of the same step replaces an earlier one there) and returns the new
// path.
func (d *Dir) SetAside(step int) (string, error) {
	dst := filepath.Join(d.Path, CkptDir, fmt.Sprintf("%s%08d", DamagedPrefix, step))
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := os.Rename(d.CkptPath(step), dst); err != nil {
		return "", err
	}
	return dst, syncDir(filepath.Join(d.Path, CkptDir))
}

// LatestGood returns the newest checkpoint that Verify passes, moving
// each newer damaged one aside (SetAside) and reporting it to note; -1
// when there is none.
func (d *Dir) LatestGood(note func(string)) (int, error) {
	for {
		step, err := d.Latest()
		if err != nil || step < 0 {
			return step, err
		}
		_, verr := d.Verify(step)
		if verr == nil {
			return step, nil
		}
		dst, err := d.SetAside(step)
		if err != nil {
			return -1, fmt.Errorf("%v; moving it aside: %w", verr, err)
		}
		if note != nil {
			note(fmt.Sprintf("%v; moved it to %s and resuming from the checkpoint before it", verr, dst))
		}
	}
}

// CkptFile is one file of a checkpoint.
type CkptFile struct {
	Name string
	Data []byte
}

// afterFile, when set by a test, runs after each checkpoint file is
// written; an error it returns stops the save there.
var afterFile func(name string) error

// Save writes the checkpoint of st.Step: files plus state.json (with
// st.Version filled in), atomically as the package doc describes. It then
// keeps only the newest keep complete checkpoints (keep ≥ 1); leftover
// .tmp-* directories are removed before it writes. A save that fails (a
// full disk, an I/O error) removes what it wrote and prunes nothing: the
// newest complete checkpoint stays the newest. A checkpoint already at
// st.Step is left as it is and Save only prunes.
func (d *Dir) Save(st State, files []CkptFile, keep int) error {
	root := filepath.Join(d.Path, CkptDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	final := d.CkptPath(st.Step)
	if _, err := os.Stat(final); err == nil {
		return d.prune(keep)
	}
	// The metrics lines up to this step outlive a crash with it.
	if err := syncFile(filepath.Join(d.Path, MetricsName)); err != nil {
		return err
	}
	// What an earlier save left goes first: on a full disk it holds room
	// this one needs.
	if err := removeTmp(root); err != nil {
		return err
	}
	tmp := filepath.Join(root, tmpPrefix+filepath.Base(final))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	if err := d.writeCkpt(tmp, final, st, files); err != nil {
		// The partial checkpoint goes: on a full disk its files hold the
		// room the metrics lines and the next save need.
		os.RemoveAll(tmp)
		return err
	}
	return d.prune(keep)
}

// writeCkpt writes the checkpoint of st into tmp and renames it to final.
func (d *Dir) writeCkpt(tmp, final string, st State, files []CkptFile) error {
	st.Version = version.Get().String()
	st.Checksums = map[string]string{}
	for _, f := range files {
		st.Checksums[f.Name] = checksum(f.Data)
	}
	sb, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range append(files, CkptFile{StateName, append(sb, '\n')}) {
		if err := writeFileSync(filepath.Join(tmp, f.Name), f.Data); err != nil {
			return err
		}
		if afterFile != nil {
			if err := afterFile(f.Name); err != nil {
				return err
			}
		}
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return syncDir(filepath.Dir(final))
}

// removeTmp removes every .tmp-* entry of the checkpoint directory root.
func removeTmp(root string) error {
	es, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range es {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// prune removes all but the newest keep checkpoints, and every .tmp-*.
func (d *Dir) prune(keep int) error {
	root := filepath.Join(d.Path, CkptDir)
	if err := removeTmp(root); err != nil {
		return err
	}
	steps, err := d.Checkpoints()
	if err != nil {
		return err
	}
	for len(steps) > max(keep, 1) {
		// Renamed first: a step-named directory is always complete, even
		// if the removal stops half-way.
		old := d.CkptPath(steps[0])
		gone := filepath.Join(root, tmpPrefix+"old-"+filepath.Base(old))
		if err := os.Rename(old, gone); err != nil {
			return err
		}
		if err := os.RemoveAll(gone); err != nil {
			return err
		}
		steps = steps[1:]
	}
	return syncDir(root)
}

// AppendMetrics appends one JSON object per value to metrics.jsonl, one
// line each, in one write. A write that fails (a full disk) is undone: the
// file is cut back to its length before, so it never ends in a torn line
// that a later line would follow.
func (d *Dir) AppendMetrics(recs ...any) error {
	var b []byte
	for _, r := range recs {
		j, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b = append(append(b, j...), '\n')
	}
	f, err := os.OpenFile(filepath.Join(d.Path, MetricsName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if err := write(f, b); err != nil {
		if terr := f.Truncate(fi.Size()); terr != nil {
			err = fmt.Errorf("%w; cutting %s back to its last whole line: %v", err, f.Name(), terr)
		}
		f.Close()
		return err
	}
	return f.Close()
}

// Metrics reads metrics.jsonl (nil when there is none). A value that does
// not fit a float64 (such as 1e400) is an error naming its line, returned
// with the lines before it.
func (d *Dir) Metrics() ([]map[string]any, error) {
	lines, err := d.metricLines()
	var out []map[string]any
	for _, l := range lines {
		var m map[string]any
		if uerr := json.Unmarshal(l.raw, &m); uerr != nil {
			return out, fmt.Errorf("run: %s line %d: %v", filepath.Join(d.Path, MetricsName), l.line, uerr)
		}
		out = append(out, m)
	}
	return out, err
}

// TrimMetrics drops the metrics lines of steps after step, and, when
// stage is StagePretrain, every line of stage StageTrain: a run resumed
// from the checkpoint at step, in stage, logs those lines again.
func (d *Dir) TrimMetrics(step int, stage string) error {
	lines, err := d.metricLines()
	if err != nil || lines == nil {
		return err
	}
	var b []byte
	for _, l := range lines {
		if l.step <= step && (stage != StagePretrain || l.stage != StageTrain) {
			b = append(append(b, l.raw...), '\n')
		}
	}
	p := filepath.Join(d.Path, MetricsName)
	if err := writeFileSync(p+".tmp", b); err != nil {
		return err
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return err
	}
	return syncDir(d.Path)
}

type metricLine struct {
	step, line int // line: 1-based, in the file
	stage      string
	raw        []byte
}

// metricLines reads metrics.jsonl, checking that every line is an object
// with a "step".
func (d *Dir) metricLines() ([]metricLine, error) {
	p := filepath.Join(d.Path, MetricsName)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []metricLine
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m struct {
			Step  *int   `json:"step"`
			Stage string `json:"stage"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Step == nil {
			if i == len(lines)-1 {
				break // a last line cut off by a crash while it was written
			}
			return out, fmt.Errorf("run: %s line %d: want an object with a step (%v)", p, i+1, err)
		}
		out = append(out, metricLine{*m.Step, i + 1, m.Stage, []byte(line)})
	}
	return out, nil
}

// writeFileSync writes data to path and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := write(f, data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncFile fsyncs the file at path if it exists.
func syncFile(path string) error {
	err := syncPath(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// syncDir fsyncs a directory, so the names created or renamed in it last.
func syncDir(path string) error { return syncPath(path) }

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
