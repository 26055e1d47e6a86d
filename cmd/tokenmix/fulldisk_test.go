package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tokenmix/tokenmix/internal/run"
)

// fullDiskCfg is trainCfg keeping one checkpoint: checkpoints at steps
// 2, 4 and 6, each replacing the one before.
var fullDiskCfg = strings.Replace(trainCfg, `"seed": 4}`, `"seed": 4, "keep_checkpoints": 1}`, 1)

// fullDiskFiles writes the text and the config of the full-disk tests
// into dir and returns their paths.
func fullDiskFiles(t *testing.T, dir string) (txt, cfg string) {
	t.Helper()
	txt, cfg = filepath.Join(dir, "t.txt"), filepath.Join(dir, "c.json")
	if err := os.WriteFile(txt, []byte(strings.Repeat("abcdefgh \nhgfedcba \n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(fullDiskCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return txt, cfg
}

// executeStderr runs execute(args) in this process and returns its exit
// code and what it wrote on stderr.
func executeStderr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stderr
	os.Stderr = f
	code := execute(args)
	os.Stderr = old
	f.Seek(0, io.SeekStart)
	b, _ := io.ReadAll(f)
	return code, string(b)
}

// checkFullDiskRun checks the run directory out after a checkpoint failed:
// its only checkpoint is kept, which verifies, and every line of
// metrics.jsonl is a JSON object with a step; it returns the steps of its
// save_error lines.
func checkFullDiskRun(t *testing.T, out string, kept int) []int {
	t.Helper()
	d, err := run.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if steps, err := d.Checkpoints(); err != nil || !slices.Equal(steps, []int{kept}) {
		t.Errorf("%s: checkpoints %v (%v), want [%d]", out, steps, err, kept)
	}
	if checked, err := d.Verify(kept); !checked || err != nil {
		t.Errorf("%s: Verify(%d): %v, %v", out, kept, checked, err)
	}
	b, err := os.ReadFile(filepath.Join(out, run.MetricsName))
	if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s: metrics.jsonl (%v) does not end a line:\n%s", out, err, b)
	}
	var saveErrs []int
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m struct {
			Step      *int
			SaveError string `json:"save_error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Step == nil {
			t.Fatalf("%s: metrics line %d %q: %v", out, i+1, line, err)
		}
		if m.SaveError != "" {
			saveErrs = append(saveErrs, *m.Step)
		}
	}
	return saveErrs
}

// TestTrainSaveErrorFlag: the checkpoint of step 4 meets a full disk (an
// injected ENOSPC half-way through its optimizer file). With the default
// --on-save-error stop, train exits 1 naming the checkpoint's path, the
// free space and the checkpoint kept (step 2, still the newest, intact);
// with --on-save-error continue it logs a save_error line, goes on, and
// the checkpoint of step 6 is written. TestTrainFullTmpfs does the same on
// a real full filesystem.
func TestTrainSaveErrorFlag(t *testing.T) {
	dir := t.TempDir()
	txt, cfg := fullDiskFiles(t, dir)
	quiet(t)
	for _, c := range []struct {
		mode string
		code int
		kept int
		want []string // in the message
	}{
		{"stop", 1, 2, []string{"saving checkpoint 4 to ", "ckpt/00000004: ", "no space left on device", " free on ",
			"the newest checkpoint is still step 2 (", "continue with --resume once there is room, or use --on-save-error continue"}},
		{"continue", 0, 6, nil},
	} {
		out := filepath.Join(dir, c.mode)
		failed := 0
		restore := run.SetWriteFault(func(path string, n int) (int, error) {
			if filepath.Base(path) == run.OptimName && strings.Contains(path, ".tmp-00000004") {
				failed++
				return n / 2, syscall.ENOSPC
			}
			return 0, nil
		})
		code, stderr := executeStderr(t, "train", "--config", cfg, "--data", txt, "--out", out, "--on-save-error", c.mode)
		restore()
		if code != c.code || failed != 1 {
			t.Fatalf("--on-save-error %s: exit %d, want %d (%d failed writes)\n%s", c.mode, code, c.code, failed, stderr)
		}
		for _, w := range append(c.want, out) {
			if !strings.Contains(stderr, w) {
				t.Errorf("--on-save-error %s: stderr without %q:\n%s", c.mode, w, stderr)
			}
		}
		t.Logf("--on-save-error %s: exit %d\n%s", c.mode, code, stderr)
		saveErrs := checkFullDiskRun(t, out, c.kept)
		if c.mode == "continue" && !slices.Equal(saveErrs, []int{4}) || c.mode == "stop" && saveErrs != nil {
			t.Errorf("--on-save-error %s: save_error lines at steps %v", c.mode, saveErrs)
		}
	}
}
