package run

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

const tinyConfig = `{"vocab_size": 32, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 8,
 "causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {"steps": 10, "seed": 1}}`

// newRun creates a run directory with a freshly initialised trainer.
func newRun(t *testing.T, path string) (*Dir, *model.Trainer[float32]) {
	t.Helper()
	cfg, err := model.ParseConfig([]byte(tinyConfig))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	d, err := Create(path, []byte(tinyConfig), Info{Task: "lm"})
	if err != nil {
		t.Fatal(err)
	}
	return d, model.NewTrainer(m)
}

// save writes the checkpoint of step with weights that depend on the step.
func save(t *testing.T, d *Dir, tr *model.Trainer[float32], step, keep int) error {
	t.Helper()
	for i := range tr.Model.Params {
		tr.Model.Params[i] = float32(step) + float32(i)/1000
	}
	tr.Opt.Step = step
	return d.SaveTrainer(tr, State{Step: step, PlannedSteps: 10}, keep)
}

// firstParam is the first weight of the model stored at path (step −1:
// newest), or an error.
func firstParam(path string, step int) (float32, error) {
	m, err := LoadModel(path, step)
	if err != nil {
		return 0, err
	}
	return m.Params[0], nil
}

func TestCreateOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, _ := newRun(t, dir)
	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Info.Format != Format || o.Info.Task != "lm" || o.Info.Version == "" || o.Info.Created == "" || string(o.Config) != tinyConfig {
		t.Errorf("opened %+v", o.Info)
	}
	if _, err := Create(dir, []byte(tinyConfig), Info{}); err == nil {
		t.Error("Create over an existing run: no error")
	}
	if s, err := d.Latest(); s != -1 || err != nil {
		t.Errorf("Latest of a new run: %d, %v", s, err)
	}
	if _, err := LoadModel(dir, -1); err == nil || !strings.Contains(err.Error(), "no complete checkpoint") {
		t.Errorf("LoadModel without a checkpoint: %v", err)
	}
	os.WriteFile(filepath.Join(dir, InfoName), []byte(`{"format": 2}`), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "format 2") {
		t.Errorf("format 2: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), InfoName) {
		t.Errorf("Open of an empty directory: %v", err)
	}
}

// TestKeepCheckpoints: keep K leaves exactly the newest K.
func TestKeepCheckpoints(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		d, tr := newRun(t, t.TempDir())
		for step := 1; step <= 6; step++ {
			if err := save(t, d, tr, step, keep); err != nil {
				t.Fatal(err)
			}
		}
		steps, err := d.Checkpoints()
		want := []int{4, 5, 6}[3-keep:]
		if err != nil || !slices.Equal(steps, want) {
			t.Errorf("keep %d: checkpoints %v (%v), want %v", keep, steps, err, want)
		}
		for _, s := range steps {
			st, err := d.ReadState(s)
			if err != nil || st.Step != s || st.Version == "" {
				t.Errorf("keep %d: state of %d: %+v, %v", keep, s, st, err)
			}
		}
	}
}

// TestSaveStoppedAfterFirstFile: a save that fails after its first file
// removes what it wrote and leaves the previous checkpoint the newest and
// loadable; a .tmp-* directory left by a crash is ignored, then removed
// by the next save.
func TestSaveStoppedAfterFirstFile(t *testing.T) {
	dir := t.TempDir()
	d, tr := newRun(t, dir)
	if err := save(t, d, tr, 10, 2); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stopped")
	afterFile = func(name string) error {
		if name == WeightsName {
			return stop
		}
		return nil
	}
	err := save(t, d, tr, 20, 2)
	afterFile = nil
	if !errors.Is(err, stop) {
		t.Fatalf("interrupted save: %v", err)
	}
	tmp := filepath.Join(dir, CkptDir, ".tmp-00000020")
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the failed save left its partial checkpoint: %v", err)
	}
	// What a crash in the middle of the save would leave.
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, WeightsName), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := d.Latest(); s != 10 || err != nil {
		t.Errorf("Latest after an interrupted save: %d, %v", s, err)
	}
	if p, err := firstParam(dir, -1); err != nil || p != 10 {
		t.Errorf("the previous checkpoint loads as %v, %v", p, err)
	}
	// Restoring a trainer works too.
	if st, err := d.Restore(tr, 10); err != nil || st.Step != 10 || tr.Opt.Step != 10 {
		t.Errorf("Restore(10): %+v, %v", st, err)
	}
	if err := save(t, d, tr, 30, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("%s not cleaned up: %v", tmp, err)
	}
	if steps, _ := d.Checkpoints(); !slices.Equal(steps, []int{10, 30}) {
		t.Errorf("checkpoints %v, want [10 30]", steps)
	}
}

// TestSaveReadOnly: a save into a directory this process may not write
// fails with an error naming the path, and the previous checkpoint stays
// loadable. As root, permissions do not apply, so the save runs in a child
// process with the unprivileged uid 65534.
func TestSaveReadOnly(t *testing.T) {
	if dir := os.Getenv("TOKENMIX_READONLY_RUN"); dir != "" {
		// The child: save step 20 and print the error.
		d, err := Open(dir)
		if err != nil {
			fmt.Println("open:", err)
			return
		}
		cfg, _ := model.ParseConfig(d.Config)
		m, _ := model.New[float32](cfg)
		fmt.Println("save:", save(t, d, model.NewTrainer(m), 20, 2))
		return
	}
	top := t.TempDir()
	dir := filepath.Join(top, "r")
	d, tr := newRun(t, dir)
	if err := save(t, d, tr, 10, 2); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, CkptDir)
	if err := os.Chmod(ckpt, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ckpt, 0o755)
	var msg string
	if os.Geteuid() != 0 {
		err := save(t, d, tr, 20, 2)
		if err == nil {
			t.Fatal("save into a read-only directory: no error")
		}
		msg = err.Error()
	} else {
		msg = saveAsNobody(t, top, dir)
	}
	t.Logf("save into a read-only directory: %s", msg)
	if !strings.Contains(msg, ckpt) || !strings.Contains(msg, "permission denied") {
		t.Errorf("save into a read-only directory: %q, want the path %s and the reason", msg, ckpt)
	}
	if p, err := firstParam(dir, -1); err != nil || p != 10 {
		t.Errorf("the previous checkpoint loads as %v, %v", p, err)
	}
}

// saveAsNobody runs TestSaveReadOnly's child side as uid 65534 on the run
// in dir and returns what it printed.
func saveAsNobody(t *testing.T, top, dir string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The child needs a binary and directories it may read.
	bin := filepath.Join(top, "run.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()
	for p := dir; ; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
		if p == filepath.Dir(top) || p == "/" {
			break
		}
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.Chmod(p, 0o644)
		}
		return nil
	})
	cmd := exec.Command(bin, "-test.run=^TestSaveReadOnly$")
	cmd.Env = append(os.Environ(), "TOKENMIX_READONLY_RUN="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if msg, ok := strings.CutPrefix(line, "save: "); ok {
			return msg
		}
	}
	t.Fatalf("child printed no save result:\n%s", out)
	return ""
}

func TestExport(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "r")
	d, tr := newRun(t, dir)
	if err := save(t, d, tr, 10, 2); err != nil {
		t.Fatal(err)
	}
	tr.Model.Params[0] = 1.00390625 // halfway between two bfloat16 values: rounds to 1
	tr.Model.Params[1] = -3.0e-5
	tr.Opt.Step = 11
	if err := d.SaveTrainer(tr, State{Step: 11}, 2); err != nil {
		t.Fatal(err)
	}
	f32, bf := filepath.Join(top, "f32"), filepath.Join(top, "bf16")
	if err := Export(dir, -1, f32, false); err != nil {
		t.Fatal(err)
	}
	if err := Export(dir, -1, bf, true); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(f32); len(es) != 2 {
		t.Errorf("export holds %d files, want config.json and weights.safetensors", len(es))
	}
	a, err := LoadModel(f32, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Params, tr.Model.Params) {
		t.Error("f32 export differs from the checkpoint")
	}
	b, err := LoadModel(bf, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range tr.Model.Params {
		if d := math.Abs(float64(b.Params[i] - v)); d > math.Abs(float64(v))/256 {
			t.Errorf("bf16 weight %d: %v for %v", i, b.Params[i], v)
			break
		}
	}
	if b.Params[0] != 1 {
		t.Errorf("bf16 of 1.00390625 = %v, want 1 (ties to even)", b.Params[0])
	}
	wf, _ := safetensors.ReadFile(filepath.Join(bf, WeightsName))
	for n, ten := range wf.Tensors {
		if ten.DType != safetensors.BF16 {
			t.Errorf("%s: dtype %s", n, ten.DType)
		}
	}
	// An earlier checkpoint, and refusals.
	old := filepath.Join(top, "old")
	if err := Export(dir, 10, old, false); err != nil {
		t.Fatal(err)
	}
	if p, _ := firstParam(old, -1); p != 10 {
		t.Errorf("export of step 10: first weight %v", p)
	}
	if err := Export(dir, -1, filepath.Join(top, "slash")+"/", false); err != nil {
		t.Errorf("export to a path with a trailing slash: %v", err)
	}
	if err := Export(dir, -1, f32, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("export over an existing directory: %v", err)
	}
	if err := Export(dir, 7, filepath.Join(top, "x"), false); err == nil || !strings.Contains(err.Error(), "no checkpoint 7") {
		t.Errorf("export of a missing step: %v", err)
	}
}

// TestMetrics: Metrics reads the lines AppendMetrics wrote, tolerates a
// last line cut off by a crash, and names the line of a value that does
// not fit a float64 instead of dropping it.
func TestMetrics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, _ := newRun(t, dir)
	if err := d.AppendMetrics(map[string]any{"step": 1, "loss": 2.5}, map[string]any{"step": 2, "loss": 2.0}); err != nil {
		t.Fatal(err)
	}
	ms, err := d.Metrics()
	if err != nil || len(ms) != 2 || ms[1]["loss"] != 2.0 {
		t.Fatalf("Metrics: %v, %v", ms, err)
	}
	p := filepath.Join(dir, MetricsName)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step": 3, "lo`) // a crash mid-line
	f.Close()
	if ms, err := d.Metrics(); err != nil || len(ms) != 2 {
		t.Errorf("Metrics with a cut last line: %d lines, %v", len(ms), err)
	}
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b[:len(b)-len(`{"step": 3, "lo`)], "{\"step\": 3, \"loss\": 1e400}\n"...), 0o644)
	if ms, err := d.Metrics(); err == nil || !strings.Contains(err.Error(), "line 3") || len(ms) != 2 {
		t.Errorf("Metrics with 1e400: %d lines, %v; want the 2 before and an error naming line 3", len(ms), err)
	}
}

// TestStages: a state.json without "stage" (older runs) reads as
// StageTrain; an unknown stage and a stage_start beyond the step are
// errors naming the file; TrimMetrics in the pretraining stage drops the
// fine-tuning lines (the head swap's included) whatever their step; Read
// refuses a pretraining checkpoint, saying why.
func TestStages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, tr := newRun(t, dir)
	if err := d.SaveTrainer(tr, State{Step: 0}, 5); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d.CkptPath(0), StateName)
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "stage") {
		t.Errorf("state.json of a plain run names a stage:\n%s", b)
	}
	if st, err := d.ReadState(0); err != nil || st.StageOf() != StageTrain {
		t.Errorf("state without a stage: %q, %v; want %q", st.StageOf(), err, StageTrain)
	}
	for _, c := range []struct{ edit, want string }{
		{`"stage": "warmup",`, `unknown stage "warmup"`},
		{`"stage_start": 3,`, "stage_start 3 outside [0, step 0]"},
	} {
		os.WriteFile(p, []byte(strings.Replace(string(b), "{", "{"+c.edit, 1)), 0o644)
		if _, err := d.ReadState(0); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.edit, err, p, c.want)
		}
	}
	os.WriteFile(p, []byte(strings.Replace(string(b), "{", `{"stage": "pretrain",`, 1)), 0o644)
	if _, err := Read(dir, 0); err == nil || !strings.Contains(err.Error(), "pretraining stage") {
		t.Errorf("Read of a pretraining checkpoint: %v", err)
	}

	lines := []map[string]any{{"step": 2, "stage": "pretrain"}, {"step": 4, "stage": "pretrain"},
		{"step": 4, "stage": "train", "head_swap": true}, {"step": 6, "stage": "train"}}
	for _, c := range []struct {
		step  int
		stage string
		want  []float64
	}{{4, StagePretrain, []float64{2, 4}}, {6, StageTrain, []float64{2, 4, 4, 6}}, {5, StageTrain, []float64{2, 4, 4}}, {2, StagePretrain, []float64{2}}} {
		os.Remove(filepath.Join(dir, MetricsName))
		if err := d.AppendMetrics(lines[0], lines[1], lines[2], lines[3]); err != nil {
			t.Fatal(err)
		}
		if err := d.TrimMetrics(c.step, c.stage); err != nil {
			t.Fatal(err)
		}
		ms, _ := d.Metrics()
		var got []float64
		for _, m := range ms {
			got = append(got, m["step"].(float64))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("TrimMetrics(%d, %s): steps %v, want %v", c.step, c.stage, got, c.want)
		}
	}
}

// TestVerifySetAside: Save records every file's SHA-256 in state.json;
// Verify passes the checkpoint, names a file whose byte was flipped or
// that is missing, and passes an older checkpoint without checksums as
// unchecked; LatestGood moves damaged newest checkpoints aside, reports
// each, and returns the newest good one.
func TestVerifySetAside(t *testing.T) {
	d, err := Create(t.TempDir(), []byte(`{}`), Info{Task: "lm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{2, 4, 6} {
		if err := d.Save(State{Step: step}, []CkptFile{{"weights.safetensors", []byte(fmt.Sprint("weights of ", step))}, {"optim.safetensors", []byte("moments")}}, 10); err != nil {
			t.Fatal(err)
		}
	}
	st, err := d.ReadState(6)
	if err != nil || len(st.Checksums) != 2 || !strings.HasPrefix(st.Checksums["weights.safetensors"], "sha256:") {
		t.Fatalf("checksums %v (%v)", st.Checksums, err)
	}
	if checked, err := d.Verify(6); !checked || err != nil {
		t.Fatalf("Verify of a good checkpoint: %v, %v", checked, err)
	}
	w := filepath.Join(d.CkptPath(6), "weights.safetensors")
	b, _ := os.ReadFile(w)
	b[3] ^= 1
	os.WriteFile(w, b, 0o644)
	os.Remove(filepath.Join(d.CkptPath(4), "optim.safetensors"))
	if _, err := d.Verify(6); err == nil || !strings.Contains(err.Error(), "00000006/weights.safetensors: damaged checkpoint") {
		t.Errorf("Verify of a flipped byte: %v", err)
	}
	if _, err := d.Verify(4); err == nil || !strings.Contains(err.Error(), "00000004/optim.safetensors: damaged checkpoint") {
		t.Errorf("Verify of a missing file: %v", err)
	}
	// An older run's checkpoint: no checksums, nothing to check.
	sp := filepath.Join(d.CkptPath(2), StateName)
	os.WriteFile(sp, []byte(`{"step": 2}`), 0o644)
	if checked, err := d.Verify(2); checked || err != nil {
		t.Errorf("Verify without checksums: %v, %v", checked, err)
	}
	var notes []string
	step, err := d.LatestGood(func(s string) { notes = append(notes, s) })
	if err != nil || step != 2 || len(notes) != 2 {
		t.Fatalf("LatestGood: step %d, %v, notes %q", step, err, notes)
	}
	for _, s := range []int{4, 6} {
		if _, err := os.Stat(filepath.Join(d.Path, CkptDir, fmt.Sprintf("damaged-%08d", s))); err != nil {
			t.Errorf("checkpoint %d not set aside: %v", s, err)
		}
	}
	if steps, _ := d.Checkpoints(); !slices.Equal(steps, []int{2}) {
		t.Errorf("checkpoints after setting aside: %v", steps)
	}
}

// TestSaveFullDisk: a checkpoint whose optimizer file meets a full disk
// half-way fails with ENOSPC naming the file, removes its partial
// directory, prunes nothing (keep 1), and leaves the previous checkpoint
// the newest, intact and loadable; the next save, with room again,
// succeeds.
func TestSaveFullDisk(t *testing.T) {
	dir := t.TempDir()
	d, tr := newRun(t, dir)
	if err := save(t, d, tr, 10, 1); err != nil {
		t.Fatal(err)
	}
	restore := SetWriteFault(func(path string, n int) (int, error) {
		if filepath.Base(path) == OptimName {
			return n / 2, syscall.ENOSPC
		}
		return 0, nil
	})
	err := save(t, d, tr, 20, 1)
	restore()
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), OptimName) {
		t.Fatalf("save on a full disk: %v, want ENOSPC naming %s", err, OptimName)
	}
	es, _ := os.ReadDir(filepath.Join(dir, CkptDir))
	if len(es) != 1 || es[0].Name() != "00000010" {
		t.Errorf("after the failed save, ckpt holds %v, want only 00000010", es)
	}
	if s, err := d.Latest(); s != 10 || err != nil {
		t.Errorf("Latest after the failed save: %d, %v", s, err)
	}
	if checked, err := d.Verify(10); !checked || err != nil {
		t.Errorf("Verify(10): %v, %v", checked, err)
	}
	if p, err := firstParam(dir, -1); err != nil || p != 10 {
		t.Errorf("the previous checkpoint loads as %v, %v", p, err)
	}
	if err := save(t, d, tr, 30, 1); err != nil {
		t.Fatal(err)
	}
	if steps, _ := d.Checkpoints(); !slices.Equal(steps, []int{30}) {
		t.Errorf("checkpoints %v, want [30]", steps)
	}
}

// TestAppendMetricsFullDisk: a metrics append that meets a full disk
// after part of its line fails, and the file is cut back to the lines
// before: byte for byte as it was, every line whole. The next append
// follows them.
func TestAppendMetricsFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, _ := newRun(t, dir)
	if err := d.AppendMetrics(map[string]any{"step": 1, "loss": 2.5}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, MetricsName)
	before, _ := os.ReadFile(p)
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		restore := SetWriteFault(func(path string, n int) (int, error) { return n - 3, errno })
		err := d.AppendMetrics(map[string]any{"step": 2, "loss": 2.0}, map[string]any{"step": 3, "loss": 1.5})
		restore()
		if !errors.Is(err, errno) {
			t.Fatalf("append on a failing disk: %v, want %v", err, errno)
		}
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Fatalf("%v: metrics.jsonl after the failed append:\n%s\nwant as before:\n%s", errno, after, before)
		}
	}
	if err := d.AppendMetrics(map[string]any{"step": 2, "loss": 2.0}); err != nil {
		t.Fatal(err)
	}
	if ms, err := d.Metrics(); err != nil || len(ms) != 2 || ms[1]["step"] != 2.0 {
		t.Errorf("Metrics: %v, %v", ms, err)
	}
}
