package tokenmix_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// buildCLI builds cmd/tokenmix into dir and returns its path.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "tokenmix")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/tokenmix").CombinedOutput(); err != nil {
		t.Fatalf("building tokenmix: %v\n%s", err, out)
	}
	return bin
}

// timing are the fields of metrics lines and checkpoint states that
// measure time, and the build's version: all that two runs of one
// config on one machine may differ in.
var timing = []string{"tokens_per_s", "elapsed_s", "train_s", "wall_s", "version", "created"}

// runFiles reads the files of run directory dir, by relative path, with
// the timing fields of its JSON files and JSON lines removed.
func runFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if name := d.Name(); name == "run.json" || name == "state.json" || name == "metrics.jsonl" {
			var lines []string
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					lines = append(lines, sc.Text()) // indented JSON: compared as text below
					continue
				}
				for _, k := range timing {
					delete(m, k)
				}
				j, _ := json.Marshal(m)
				lines = append(lines, string(j))
			}
			if name != "metrics.jsonl" {
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for _, k := range timing {
					delete(m, k)
				}
				j, _ := json.Marshal(m)
				lines = []string{string(j)}
			}
			b = []byte(strings.Join(lines, "\n"))
		}
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTrainCLIEqualsAPI: `tokenmix train` and tokenmix.Train on the same
// config and data write the same run directory, apart from the times
// and versions they record: a classifier with --val, an lm on text with
// the default hold-out, and a classifier with no config at all.
func TestTrainCLIEqualsAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	bin := buildCLI(t, dir)
	if err := spamHam(filepath.Join(dir, "train.jsonl"), 300, 1); err != nil {
		t.Fatal(err)
	}
	spamHam(filepath.Join(dir, "val.jsonl"), 50, 2)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 200)
	os.WriteFile(filepath.Join(dir, "fox.txt"), []byte(text), 0o644)
	classify := strings.Replace(spamConfig, `"steps": 300`, `"steps": 30, "checkpoint_every": 10, "keep_checkpoints": 5`, 1)
	lm := `{"vocab_size": 256, "d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64, "max_len": 32, "causal": true,
	 "task": "lm", "mixer": {"kind": "aft_simple"}, "train": {"batch_size": 4, "steps": 20, "eval_every": 10, "log_every": 5, "seed": 3}}`
	os.WriteFile(filepath.Join(dir, "classify.json"), []byte(classify), 0o644)
	os.WriteFile(filepath.Join(dir, "lm.json"), []byte(lm), 0o644)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cli  []string
		cfg  string
		data func() (tokenmix.Dataset, tokenmix.Dataset)
	}{
		{"classify", []string{"--config", "classify.json", "--data", "train.jsonl", "--val", "val.jsonl"}, "classify.json",
			func() (tokenmix.Dataset, tokenmix.Dataset) {
				return tokenmix.JSONLFile(filepath.Join(dir, "train.jsonl")), tokenmix.JSONLFile(filepath.Join(dir, "val.jsonl"))
			}},
		{"lm", []string{"--config", "lm.json", "--data", "fox.txt"}, "lm.json",
			func() (tokenmix.Dataset, tokenmix.Dataset) {
				return tokenmix.HoldOut(tokenmix.TextFiles(filepath.Join(dir, "fox.txt")), 0.05)
			}},
		{"inferred", []string{"--data", "train.jsonl", "--mixer", "fnet"}, "",
			func() (tokenmix.Dataset, tokenmix.Dataset) {
				return tokenmix.HoldOut(tokenmix.JSONLFile(filepath.Join(dir, "train.jsonl")), 0.05)
			}},
	} {
		cmd := exec.Command(bin, append([]string{"train", "--out", "cli-" + c.name}, c.cli...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: tokenmix train: %v\n%s", c.name, err, out)
		}
		var cfg tokenmix.TrainConfig
		if c.cfg != "" {
			b, _ := os.ReadFile(filepath.Join(dir, c.cfg))
			var err error
			if cfg, err = tokenmix.ParseTrainConfig(b); err != nil {
				t.Fatal(err)
			}
		} else {
			cfg.Mixer.Kind = "fnet"
		}
		tr, val := c.data()
		if _, err := tokenmix.Train(ctx, cfg, tr, tokenmix.WithValidation(val), tokenmix.WithOutDir(filepath.Join(dir, "api-"+c.name))); err != nil {
			t.Fatalf("%s: tokenmix.Train: %v", c.name, err)
		}
		a, b := runFiles(t, filepath.Join(dir, "cli-"+c.name)), runFiles(t, filepath.Join(dir, "api-"+c.name))
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range a {
				if !yield(k) {
					return
				}
			}
		})
		if len(a) != len(b) || len(a) < 6 {
			t.Errorf("%s: the command wrote %d files, the API %d", c.name, len(a), len(b))
		}
		for _, n := range names {
			if !bytes.Equal(a[n], b[n]) {
				t.Errorf("%s: %s differs:\ncommand: %.300s\nAPI:     %.300s", c.name, n, a[n], b[n])
			}
		}
	}
}

// TestREADMELibrary runs the README's library examples as written: its
// commands with the built command on its PATH, and its Go snippets in a
// program of a separate module.
func TestREADMELibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and a module")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(readme)
	sec = sec[strings.Index(sec, "## Library"):]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	blocks := regexp.MustCompile("(?s)```(go)?\n(.*?)```").FindAllStringSubmatch(sec, -1)
	var shell, gocode []string
	for _, b := range blocks {
		if b[1] == "go" {
			gocode = append(gocode, b[2])
		} else {
			shell = append(shell, b[2])
		}
	}
	if len(shell) != 1 || len(gocode) != 2 {
		t.Fatalf("README library section: %d command blocks and %d Go blocks, want 1 and 2", len(shell), len(gocode))
	}
	dir := t.TempDir()
	buildCLI(t, dir)
	if err := spamHam(filepath.Join(dir, "train.jsonl"), 1000, 1); err != nil {
		t.Fatal(err)
	}
	spamHam(filepath.Join(dir, "test.jsonl"), 200, 2)
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, line := range strings.Split(strings.TrimSpace(shell[0]), "\n") {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "predict") && !strings.Contains(string(out), `"name":"spam"`) {
			t.Errorf("%s: %s, want spam", line, out)
		}
	}
	var prog strings.Builder
	prog.WriteString("package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log\"\n\n\t\"github.com/tokenmix/tokenmix\"\n)\n\nfunc main() {\n\tctx := context.Background()\n\t_ = ctx\n")
	for _, g := range gocode {
		fmt.Fprintf(&prog, "\t{\n%s\t}\n", g)
	}
	prog.WriteString("}\n")
	mod := userModule(t, "readme")
	os.WriteFile(filepath.Join(mod, "main.go"), []byte(prog.String()), 0o644)
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", filepath.Join(dir, "readme"), ".")
	build.Dir, build.Env = mod, append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the README's Go:\n%s\n%v\n%s", prog.String(), err, out)
	}
	run := exec.Command(filepath.Join(dir, "readme"))
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil || string(out) != "spam\ntrue\n" {
		t.Errorf("the README's Go printed %q (%v), want \"spam\\ntrue\\n\"", out, err)
	}
}

// TestTrainFreeze: parameters WithFreeze names keep the values WithInit
// gave them, with zero optimizer moments, while the rest train; the run's
// config records train.freeze, so a resumed run keeps it.
func TestTrainFreeze(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 10, LR: 3e-3}}
	if _, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(a)); err != nil {
		t.Fatal(err)
	}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(b),
		tokenmix.WithInit(a), tokenmix.WithFreeze("embed.", "blocks.0.mixer."))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Train struct{ Freeze []string } }
	if json.Unmarshal(r.Config().JSON, &c); !slices.Equal(c.Train.Freeze, []string{"embed.", "blocks.0.mixer."}) {
		t.Errorf("config train.freeze = %v", c.Train.Freeze)
	}
	before, err := safetensors.ReadFile(filepath.Join(a, "ckpt", "00000010", "weights.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := safetensors.ReadFile(filepath.Join(b, "ckpt", "00000010", "weights.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	optim, err := safetensors.ReadFile(filepath.Join(b, "ckpt", "00000010", "optim.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	frozen, trained := 0, 0
	for _, name := range after.Names() {
		w0, _, err := before.F32(name)
		if err != nil {
			t.Fatal(err)
		}
		w1, _, _ := after.F32(name)
		m, _, _ := optim.F32("m." + name)
		isFrozen := strings.HasPrefix(name, "embed.") || strings.HasPrefix(name, "blocks.0.mixer.")
		same := slices.Equal(w0, w1)
		switch {
		case isFrozen && (!same || slices.ContainsFunc(m, func(v float32) bool { return v != 0 })):
			t.Errorf("%s is frozen but changed (or has optimizer moments)", name)
		case isFrozen:
			frozen++
		case !same && !strings.HasPrefix(name, "head."):
			trained++
		}
	}
	if frozen < 5 || trained < 5 {
		t.Errorf("%d frozen tensors kept, %d others trained; want several of each", frozen, trained)
	}
}

// boom is a mixer kind whose Forward panics once armed.
type boom[F float32 | float64] struct{ d int }

var boomArmed bool

func (m boom[F]) Params() []mixer.ParamSpec   { return nil }
func (m boom[F]) Bind(w, g [][]F)             {}
func (m boom[F]) ActSize(b, t int) int        { return 0 }
func (m boom[F]) ScratchSize(b, t, _ int) int { return 0 }
func (m boom[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	if boomArmed { // in every chunk of a parallel loop, some on pool workers
		parallel.For(4, 4, 1, func(int, int, int) {
			time.Sleep(5 * time.Millisecond) // the workers take chunks meanwhile
			panic("the mixer broke")
		})
	}
	clear(out)
}
func (m boom[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {}

var (
	addBoom sync.Once
	boomErr error
)

// TestTrainPanics: a panic in the caller's code (a mixer kind, here in a
// parallel loop's chunk, which may run on a pool worker; the progress
// function) is an error of Train, not a crash.
func TestTrainPanics(t *testing.T) {
	addBoom.Do(func() { // once a process: go test -count=N runs tests again
		boomErr = registry.Add(mixer.Kind{Name: "test_boom", Causal: true, Bidirectional: true, Paper: "a test kind",
			New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return boom[float32]{c.D}, c.Opts.Err() },
			New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return boom[float64]{c.D}, c.Opts.Err() },
			Tests: []mixer.TestCase{{Name: "bidirectional", D: 4, Heads: 1, B: 1, T: 3}}})
	})
	if boomErr != nil {
		t.Fatal(boomErr)
	}
	boomArmed = true
	defer func() { boomArmed = false }()
	cfg := tokenmix.TrainConfig{Mixer: mixer.OptionsOf("test_boom", nil), Train: tokenmix.TrainSettings{Steps: 3}}
	if _, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping())); err == nil || !strings.Contains(err.Error(), "panic: the mixer broke") {
		t.Errorf("a panicking mixer: %v", err)
	}
	cfg.Mixer = mixer.OptionsOf("full", nil)
	progress := tokenmix.WithProgress(func(tokenmix.Progress) { panic("the callback broke") })
	if _, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), progress); err == nil || !strings.Contains(err.Error(), "panic: the callback broke") {
		t.Errorf("a panicking progress function: %v", err)
	}
}

// TestTrainInitKeepsHead: WithInit on data with the run's own classes
// keeps its head, so that zero updates give the run's model; other
// classes get a new head.
func TestTrainInitKeepsHead(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 20, LR: 3e-3}}
	if _, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(a)); err != nil {
		t.Fatal(err)
	}
	base, err := tokenmix.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	probe := [][]int32{base.Encode("today I bought a pear")}
	want, _ := base.Logits(context.Background(), probe)
	// A tiny learning rate: the weights barely move from the run's.
	tiny := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 1, LR: 1e-12}}
	r, err := tokenmix.Train(context.Background(), tiny, tokenmix.Examples(shopping()), tokenmix.WithInit(a))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Model()
	got, _ := m.Logits(context.Background(), probe)
	for i := range want.Data {
		if d := got.Data[i] - want.Data[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("same classes: logits %v, the run's %v: the head was not kept", got.Data, want.Data)
		}
	}
	renamed := shopping()
	for i := range renamed {
		renamed[i].Label = strings.ToUpper(renamed[i].Label)
	}
	r, err = tokenmix.Train(context.Background(), tiny, tokenmix.Examples(renamed), tokenmix.WithInit(a))
	if err != nil {
		t.Fatal(err)
	}
	m, _ = r.Model()
	got, _ = m.Logits(context.Background(), probe)
	if fmt.Sprint(got.Data) == fmt.Sprint(want.Data) {
		t.Error("other class names: the head was kept")
	}
}

// TestTrainContinueOnSaveError: the checkpoint of step 2 meets a full
// disk (an injected ENOSPC). Train stops there with an error naming it
// and the free space, with no checkpoint written; with
// WithContinueOnSaveError it notes the failure, trains on and saves the
// checkpoint of step 4.
func TestTrainContinueOnSaveError(t *testing.T) {
	restore := run.SetWriteFault(func(path string, n int) (int, error) {
		if strings.Contains(path, ".tmp-00000002") {
			return 0, syscall.ENOSPC
		}
		return 0, nil
	})
	defer restore()
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 4, CheckpointEvery: 2}}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	_, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(a))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "saving checkpoint 2 to "+filepath.Join(a, "ckpt", "00000002")) ||
		!strings.Contains(err.Error(), " free on "+a) || !strings.Contains(err.Error(), "there is no checkpoint yet") {
		t.Errorf("Train on a full disk: %v", err)
	}
	var notes []string
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(b),
		tokenmix.WithContinueOnSaveError(), tokenmix.WithProgress(func(p tokenmix.Progress) {
			if strings.Contains(p.Note, "saving checkpoint") {
				notes = append(notes, p.Note)
			}
		}))
	if err != nil || r.Step() != 4 || len(notes) != 1 || !strings.Contains(notes[0], "the next checkpoint tries again") {
		t.Fatalf("WithContinueOnSaveError: %v, notes %q", err, notes)
	}
	if _, err := os.Stat(filepath.Join(b, "ckpt", "00000004", "weights.safetensors")); err != nil {
		t.Error(err)
	}
	if _, err := tokenmix.Load(b, tokenmix.WithContinueOnSaveError()); err == nil || !strings.Contains(err.Error(), "WithContinueOnSaveError") {
		t.Errorf("Load with WithContinueOnSaveError: %v, want an error naming it", err)
	}
}
