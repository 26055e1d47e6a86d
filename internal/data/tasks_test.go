package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTaskList(t *testing.T) {
	if got, want := TaskNames(), []string{"listops", "fmnist", "gosrc", "recall"}; !slices.Equal(got, want) {
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
	if err == nil || !strings.Contains(err.Error(), `task.name: unknown task "lisops" (want listops, fmnist, gosrc or recall)`) {
		t.Errorf("unknown task: %v", err)
	}
}

func TestTaskLen(t *testing.T) {
	for _, tc := range []struct {
		name string
		want map[string]any
	}{
		{"recall", map[string]any{"len": 64}},
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
	for _, tc := range []struct{ name, keys, err string }{
		{"recall", `{"lenn": 16}`, "task.lenn"},
		{"recall", `{"len": "16"}`, "task.len"},
		{"recall", `{"len": null}`, "task.len"},
		{"listops", `{"max_len": 1.5}`, "task.max_len"},
		{"gosrc", `{"root": 3}`, "task.root"},
		{"fmnist", `{"data_dir": []}`, "task.data_dir"},
		{"nope", `{}`, "task.name"},
	} {
		if _, err := NewTask(tc.name, keys(tc.keys), ""); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %s: error %v, want one naming %s", tc.name, tc.keys, err, tc.err)
		}
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
