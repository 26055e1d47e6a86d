package data

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTaskList(t *testing.T) {
	if got, want := TaskNames(), []string{"listops", "fmnist", "gosrc", "gotags", "recall", "pathfinder"}; !slices.Equal(got, want) {
		t.Errorf("tasks %v, want %v", got, want)
	}
	for _, s := range Tasks() {
		if s.Summary == "" || s.New == nil || s.Len == nil {
			t.Errorf("%s: incomplete entry", s.Name)
		}
		if got, err := LookupTask(s.Name); err != nil || got.Name != s.Name {
			t.Errorf("LookupTask(%q): %v", s.Name, err)
		}
	}
	_, err := LookupTask("lisops")
	if err == nil || !strings.Contains(err.Error(), `task.name: unknown task "lisops" (want listops, fmnist, gosrc, gotags, recall or pathfinder)`) {
		t.Errorf("unknown task: %v", err)
	}
}

func TestTaskLen(t *testing.T) {
	for _, tc := range []struct {
		name string
		want map[string]any
	}{
		{"recall", map[string]any{"len": 64}},
		{"pathfinder", map[string]any{"len": 64}},
		{"gosrc", map[string]any{"seq_len": 64}},
		{"listops", map[string]any{"max_len": 64, "min_len": 16}},
		{"fmnist", nil},
	} {
		s, _ := LookupTask(tc.name)
		got, _ := json.Marshal(s.Len(64))
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Errorf("%s: Len(64) = %s, want %s", tc.name, got, want)
		}
	}
}

// TestNewTask: keys are decoded strictly, errors name them as task.<key>.
func TestNewTask(t *testing.T) {
	keys := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	recall := `{"len": 16, "pairs": 3, "keys": 8, "values": 4, "train": 8, "val": 4, "test": 4}`
	task, err := NewTask("recall", keys(recall), "")
	if err != nil {
		t.Fatal(err)
	}
	if info := task.Info(); info.Name != "recall" || info.MaxLen != 16 {
		t.Errorf("recall info %+v", info)
	}
	gosrc := t.TempDir()
	os.WriteFile(filepath.Join(gosrc, "a.go"), []byte("package a\n"), 0o644)
	for _, tc := range []struct{ name, keys, key, want string }{
		{"recall", `{"lenn": 16}`, "task.lenn", "unknown key"},
		{"recall", `{"len": "16"}`, "task.len", `want an integer, got "16"`},
		{"recall", `{"len": null}`, "task.len", "want an integer, got null"},
		{"recall", `{"len": 8, "pairs": 4}`, "task.len", "4 pairs and 1 queries need ≥ 9 tokens, got 8"},
		{"recall", `{"len": 4, "pairs": 4, "fused": true}`, "task.len", "4 pairs and 1 queries need ≥ 5 tokens, got 4"},
		{"recall", `{"pairs": -1}`, "task.pairs", "want ≥ 1, got -1"},
		{"recall", `{"queries": -2}`, "task.queries", "want ≥ 1, got -2"},
		{"recall", `{"len": 16, "pairs": 3, "keys": 2}`, "task.keys", "want ≥ pairs (3), got 2"},
		{"recall", `{"len": 16, "pairs": 3, "values": 2}`, "task.values", "want ≥ pairs (3), got 2"},
		{"recall", `{"len": 16, "pairs": 1, "values": 1}`, "task.values", "want ≥ 2, got 1"},
		{"recall", `{"len": 16, "pairs": 3, "val": -1}`, "task.val", "want ≥ 0, got -1"},
		{"recall", `{"layout": "pairs-first"}`, "task.layout", `want "random" or "pairs_first", got "pairs-first"`},
		{"recall", `{"layout": 1}`, "task.layout", "want a string, got 1"},
		{"listops", `{"max_len": 1.5}`, "task.max_len", "want an integer, got 1.5"},
		{"listops", `{"test": -4}`, "task.test", "want ≥ 0, got -4"},
		{"listops", `{"min_len": -1}`, "task.min_len", "want ≥ 1, got -1"},
		{"listops", `{"min_len": 10, "max_len": 11}`, "task.max_len", "want > min_len+1 (11), got 11"},
		{"listops", `{"max_depth": 1}`, "task.max_depth", "want ≥ 2, got 1"},
		{"listops", `{"max_args": 1}`, "task.max_args", "want ≥ 2, got 1"},
		{"gosrc", `{"root": 3}`, "task.root", "want a string, got 3"},
		{"gosrc", `{"seq_len": -1}`, "task.seq_len", "want ≥ 1, got -1"},
		{"gosrc", `{"val_percent": -5}`, "task.val_percent", "want ≥ 0, got -5"},
		{"gosrc", `{"val_percent": 60, "test_percent": 40}`, "task.test_percent", "want val_percent + test_percent < 100, got 60 + 40"},
		{"gosrc", `{"max_val_bytes": -1}`, "task.max_val_bytes", "want ≥ 0, got -1"},
		{"gosrc", `{"seq_len": 8, "eval_context": 8}`, "task.eval_context", "want in [0, seq_len (8)), got 8"},
		{"gosrc", `{"order": "dir"}`, "task.order", `want "path" or "package", got "dir"`},
		{"gosrc", `{"root": "` + t.TempDir() + `"}`, "task.root", "no .go files under"},
		{"gosrc", `{"root": "` + gosrc + `"}`, "task.root", "split of"},
		{"fmnist", `{"data_dir": []}`, "task.data_dir", "want a string, got []"},
		{"fmnist", `{"train": -1}`, "task.train", "want ≥ 0, got -1"},
		{"fmnist", `{"data_dir": "` + t.TempDir() + `"}`, "task.data_dir", "not in"},
		{"pathfinder", `{"len": 1000}`, "task.len", "want side² with side ≥ 16"},
		{"pathfinder", `{"contour_len": -3}`, "task.contour_len", "want ≥ 1, got -3"},
		{"pathfinder", `{"distractors": "5"}`, "task.distractors", `want an integer, got "5"`},
		{"pathfinder", `{"gap": -1}`, "task.gap", "want ≥ 1, got -1"},
		{"pathfinder", `{"test": -2}`, "task.test", "want ≥ 0, got -2"},
		{"nope", `{}`, "task.name", `unknown task "nope"`},
	} {
		_, err := NewTask(tc.name, keys(tc.keys), "")
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want %q", tc.name, tc.keys, err, tc.key+": …"+tc.want)
		}
	}
	// The constructors name the key after the task; a missing Fashion-MNIST
	// file still wraps ErrNoFMNIST through NewTask.
	if _, err := NewRecall(RecallConfig{Values: 1, Pairs: 1}); err == nil || err.Error() != "recall.values: want ≥ 2, got 1" {
		t.Errorf("NewRecall: error %v", err)
	}
	if _, err := NewTask("fmnist", keys(`{"data_dir": "`+t.TempDir()+`"}`), ""); !errors.Is(err, ErrNoFMNIST) {
		t.Errorf("fmnist: error %v does not wrap ErrNoFMNIST", err)
	}
}

// TestNewTaskListOpsCache: with a cache directory ListOps is generated once and
// loaded after; the loaded task equals a fresh one.
func TestNewTaskListOpsCache(t *testing.T) {
	dir := t.TempDir()
	k := map[string]json.RawMessage{}
	json.Unmarshal([]byte(`{"train": 20, "val": 4, "test": 4, "min_len": 5, "max_len": 40, "seed": 3}`), &k)
	a, err := NewTask("listops", k, dir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "listops-*.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	st, _ := os.Stat(files[0])
	b, err := NewTask("listops", k, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(files[0]); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("cache written twice")
	}
	c, _ := NewTask("listops", k, "")
	for s := Train; s <= Test; s++ {
		for i := range c.Len(s) {
			n := c.ExampleLen(s, i)
			x, y, z := make([]int32, n+1), make([]int32, n+1), make([]int32, n+1)
			a.Example(x[:n], x[n:], s, i)
			b.Example(y[:n], y[n:], s, i)
			c.Example(z[:n], z[n:], s, i)
			if a.ExampleLen(s, i) != n || !slices.Equal(x, z) || !slices.Equal(y, z) {
				t.Fatalf("%s %d: cached example differs", s, i)
			}
		}
	}
}
