package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"

	"github.com/tokenmix/tokenmix/internal/strict"
)

// TaskSpec is one entry of the task list.
type TaskSpec struct {
	Name    string // "listops", "fmnist", "gosrc", "recall", "pathfinder", ...
	Summary string // one line for help texts
	// New builds the task from the keys of its config object other than
	// "name", decoded strictly (errors name the key as "task.<key>");
	// cacheDir, when not empty, caches generated data (ListOps).
	New func(keys map[string]json.RawMessage, cacheDir string) (Task, error)
	// Len returns the task keys that set its sequence length to n, or nil
	// when the length is fixed (fmnist).
	Len func(n int) map[string]any
}

// Tasks returns the task list, in a fixed order: every built-in task, each
// listed once here.
func Tasks() []TaskSpec {
	return []TaskSpec{
		{
			Name:    "listops",
			Summary: "LRA's ListOps: nested MIN/MAX/MED/SM expressions over digits; classify the value (10 classes)",
			New:     newListOpsTask,
			Len:     func(n int) map[string]any { return map[string]any{"max_len": n, "min_len": n / 4} },
		},
		{
			Name:    "fmnist",
			Summary: "sequential Fashion-MNIST: 784 pixel tokens, 10 classes, from IDX files (data_dir)",
			New:     decoded(NewFMNIST),
			Len:     func(int) map[string]any { return nil },
		},
		{
			Name:    "gosrc",
			Summary: "byte-level language modelling on the Go standard library's source (bits per byte)",
			New:     decoded(NewGoSrc),
			Len:     func(n int) map[string]any { return map[string]any{"seq_len": n} },
		},
		{
			Name:    "gotags",
			Summary: "token tagging on the Go standard library's source: comments, identifiers, keywords, numbers and strings as go/scanner sees them, per byte (BIO)",
			New:     decoded(NewGoTags),
			Len:     func(n int) map[string]any { return map[string]any{"len": n} },
		},
		{
			Name:    "recall",
			Summary: "synthetic associative recall: key-value pairs, then a query key; predict its value",
			New:     decoded(NewRecall),
			Len:     func(n int) map[string]any { return map[string]any{"len": n} },
		},
		{
			Name:    "pathfinder",
			Summary: "LRA's Pathfinder: are two markers joined by one dashed contour among distractors? side² pixel tokens, 2 classes",
			New:     decoded(NewPathfinder),
			Len:     func(n int) map[string]any { return map[string]any{"len": n} },
		},
	}
}

// TaskNames returns the names of the task list, in its order.
func TaskNames() []string {
	var ns []string
	for _, t := range Tasks() {
		ns = append(ns, t.Name)
	}
	return ns
}

// LookupTask returns the entry of the task list named name, or an error
// that lists the known names.
func LookupTask(name string) (TaskSpec, error) {
	for _, t := range Tasks() {
		if t.Name == name {
			return t, nil
		}
	}
	ns := TaskNames()
	return TaskSpec{}, fmt.Errorf("task.name: unknown task %q (want %s or %s)", name,
		strings.Join(ns[:len(ns)-1], ", "), ns[len(ns)-1])
}

// NewTask builds the task name from its config keys (all but "name"); see
// TaskSpec.New. Every error about a key names it as "task.<key>": a
// KeyError from the task's constructor comes back with Prefix "task".
func NewTask(name string, keys map[string]json.RawMessage, cacheDir string) (Task, error) {
	t, err := LookupTask(name)
	if err != nil {
		return nil, err
	}
	task, err := t.New(keys, cacheDir)
	var ke *KeyError
	if errors.As(err, &ke) {
		return nil, &KeyError{Prefix: "task", Key: ke.Key, Err: ke.Err}
	}
	return task, err
}

// NewTaskAtLen is NewTask with the task's sequence length set to n: the
// keys its TaskSpec.Len gives for n override those of keys. A task whose
// length is fixed (fmnist) is an error.
func NewTaskAtLen(name string, keys map[string]json.RawMessage, n int, cacheDir string) (Task, error) {
	spec, err := LookupTask(name)
	if err != nil {
		return nil, err
	}
	kv := spec.Len(n)
	if kv == nil {
		return nil, fmt.Errorf("task %s has a fixed length", name)
	}
	at := make(map[string]json.RawMessage, len(keys)+len(kv))
	for k, v := range keys {
		at[k] = v
	}
	for k, v := range kv {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		at[k] = b
	}
	return NewTask(name, at, cacheDir)
}

// KeyError is an error about one key of a task's config. It reads
// "<Prefix>.<Key>: <Err>": the task's name as the prefix when its
// constructor (NewRecall, NewGoSrc, ...) is called directly, "task" when
// NewTask returns it, so the key is named by its path in a preset.
type KeyError struct {
	Prefix string // "listops", "fmnist", "gosrc", "recall", "pathfinder"; "task" from NewTask
	Key    string // the key as its config's JSON spells it
	Err    error
}

func (e *KeyError) Error() string { return e.Prefix + "." + e.Key + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *KeyError) Unwrap() error { return e.Err }

// keyErr returns a KeyError about key of task's config.
func keyErr(task, key, format string, args ...any) error {
	return &KeyError{Prefix: task, Key: key, Err: fmt.Errorf(format, args...)}
}

// checkSplits returns a KeyError naming the first negative split size.
func checkSplits(task string, train, val, test int) error {
	for _, s := range []struct {
		key string
		n   int
	}{{"train", train}, {"val", val}, {"test", test}} {
		if s.n < 0 {
			return keyErr(task, s.key, "want ≥ 0, got %d", s.n)
		}
	}
	return nil
}

// decoded returns a TaskSpec.New that decodes the keys strictly into the
// constructor's config (decodeTask) and calls it.
func decoded[C any, T Task](ctor func(C) (T, error)) func(map[string]json.RawMessage, string) (Task, error) {
	return func(keys map[string]json.RawMessage, _ string) (Task, error) {
		var c C
		if err := decodeTask(keys, &c); err != nil {
			return nil, err
		}
		t, err := ctor(c)
		if err != nil {
			return nil, err // not a Task holding a nil pointer
		}
		return t, nil
	}
}

// decodeTask decodes a task's keys strictly into dst, naming them
// "task.<key>".
func decodeTask(keys map[string]json.RawMessage, dst any) error {
	if keys == nil {
		keys = map[string]json.RawMessage{}
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return fmt.Errorf("task: %v", err)
	}
	return strict.Struct("task.", b, dst)
}

// newListOpsTask builds ListOps. With a cacheDir it is generated once and
// kept there as listops-<FNV-1a of its config>.gob, which later calls (an
// arena's workers) load.
func newListOpsTask(keys map[string]json.RawMessage, cacheDir string) (Task, error) {
	var c ListOpsConfig
	if err := decodeTask(keys, &c); err != nil {
		return nil, err
	}
	if cacheDir == "" {
		return NewListOps(c)
	}
	kb, _ := json.Marshal(c)
	h := fnv.New64a()
	h.Write(kb)
	path := filepath.Join(cacheDir, fmt.Sprintf("listops-%016x.gob", h.Sum64()))
	if l, err := LoadListOps(path, c); err == nil {
		return l, nil
	}
	l, err := NewListOps(c)
	if err != nil {
		return nil, err
	}
	if err := SaveListOps(path, l); err != nil {
		return nil, err
	}
	return l, nil
}

// ParseTaskArg splits a task argument, a task list name or its JSON
// object {"name": …, other keys}, into the name and the other keys.
func ParseTaskArg(arg string) (string, map[string]json.RawMessage, error) {
	name, keys := arg, map[string]json.RawMessage{}
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		if err := json.Unmarshal([]byte(arg), &keys); err != nil {
			return "", nil, err
		}
		if err := json.Unmarshal(keys["name"], &name); err != nil || name == "" {
			return "", nil, fmt.Errorf("task.name: want one of %s", strings.Join(TaskNames(), ", "))
		}
		delete(keys, "name")
	}
	return name, keys, nil
}
