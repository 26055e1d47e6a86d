package train

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tokenmix/tokenmix/internal/run"
)

// notesOf records a run's notes.
type notesOf struct {
	Progress
	lines *[]string
}

func (n notesOf) Note(line string) { *n.lines = append(*n.lines, line) }

// failSave makes the writes of the optimizer file of the checkpoint at
// step fail half-way with errno, until the returned function is called.
func failSave(step string, errno syscall.Errno) (restore func()) {
	return run.SetWriteFault(func(path string, n int) (int, error) {
		if filepath.Base(path) == run.OptimName && strings.Contains(path, ".tmp-"+step) {
			return n / 2, errno
		}
		return 0, nil
	})
}

// checkMetricLines fails t unless every line of d's metrics.jsonl is a
// JSON object with a step.
func checkMetricLines(t *testing.T, d *run.Dir) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Path, run.MetricsName))
	if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("metrics.jsonl (%v) does not end a line:\n%s", err, b)
	}
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["step"] == nil {
			t.Fatalf("metrics line %d %q: %v", i+1, line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRunSaveError: a checkpoint that meets a full disk (or an I/O error)
// stops the run with a SaveError naming its path, the free space and the
// checkpoint kept, which stays the newest and verifies; with
// ContinueOnSaveError the run notes it, logs a save_error line, goes on
// and ends with the weights and optimizer state of a run that never
// failed; a last checkpoint that cannot be written stops it either way.
func TestRunSaveError(t *testing.T) {
	d0, ref, src0 := setup(t, 1, 2) // checkpoints at 2, 4, 6 and 7
	if _, err := Run(context.Background(), d0, ref, src0, Options{Steps: 7}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		at       string // the checkpoint that fails
		errno    syscall.Errno
		goOn     bool
		wantErr  bool
		wantKept int
	}{
		{"stop", "00000004", syscall.ENOSPC, false, true, 2},
		{"stop EIO", "00000004", syscall.EIO, false, true, 2},
		{"continue", "00000004", syscall.ENOSPC, true, false, 7},
		{"continue, last fails", "00000007", syscall.ENOSPC, true, true, 6},
	} {
		d, tr, src := setup(t, 1, 2)
		var notes []string
		restore := failSave(c.at, c.errno)
		_, err := Run(context.Background(), d, tr, src, Options{Steps: 7, ContinueOnSaveError: c.goOn,
			Progress: notesOf{NewProgress(nil), &notes}})
		restore()
		var se *SaveError
		switch {
		case !c.wantErr && err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case c.wantErr && !errors.As(err, &se):
			t.Fatalf("%s: %v, want a SaveError", c.name, err)
		case c.wantErr:
			msg := err.Error()
			t.Logf("%s: %s", c.name, msg)
			for _, want := range []string{d.Path + "/ckpt/" + c.at, c.errno.Error(), " free on " + d.Path,
				"newest checkpoint is still step", d.CkptPath(c.wantKept)} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: message without %q: %s", c.name, want, msg)
				}
			}
			if !errors.Is(err, c.errno) || se.Kept != c.wantKept || se.Last != (c.at == "00000007") {
				t.Errorf("%s: %+v", c.name, se)
			}
		}
		if steps, err := d.Checkpoints(); err != nil || !slices.Equal(steps, []int{c.wantKept}) {
			t.Errorf("%s: checkpoints %v (%v), want [%d]", c.name, steps, err, c.wantKept)
		}
		if checked, err := d.Verify(c.wantKept); !checked || err != nil {
			t.Errorf("%s: Verify(%d): %v, %v", c.name, c.wantKept, checked, err)
		}
		ms := checkMetricLines(t, d)
		var saveErrs []any
		for _, m := range ms {
			if e, ok := m["save_error"]; ok {
				saveErrs = append(saveErrs, m["step"], e)
			}
		}
		if c.goOn && c.at == "00000004" {
			if len(saveErrs) != 2 || saveErrs[0] != 4.0 || !strings.Contains(saveErrs[1].(string), c.errno.Error()) {
				t.Errorf("%s: save_error lines %v, want one at step 4", c.name, saveErrs)
			}
			if len(notes) != 1 || !strings.Contains(notes[0], "next checkpoint tries again") {
				t.Errorf("%s: notes %q", c.name, notes)
			}
			if !slices.Equal(tr.Model.Params, ref.Model.Params) || !slices.Equal(tr.Opt.M, ref.Opt.M) || !slices.Equal(tr.Opt.V, ref.Opt.V) {
				t.Errorf("%s: weights or optimizer state differ from a run without the failure", c.name)
			}
		} else if len(saveErrs) != 0 {
			t.Errorf("%s: save_error lines %v", c.name, saveErrs)
		}
	}
}
