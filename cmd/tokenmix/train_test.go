package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/version"
)

const trainCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 16,
 "causal": true, "task": "lm", "mixer": {"kind": "full"},
 "train": {"batch_size": 2, "steps": 6, "lr": 0.01, "warmup": 2, "log_every": 2, "eval_every": 3, "eval_batches": 1, "checkpoint_every": 2, "seed": 4}}`

// TestTrainResume trains 6 steps straight, and again with an interruption
// after step 3 followed by --resume: the final checkpoints are
// byte-identical.
func TestTrainResume(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	text := make([]byte, 4000)
	for i := range text {
		text[i] = "abcdefgh \n"[rng.IntN(10)]
	}
	txt, cfg := filepath.Join(dir, "t.txt"), filepath.Join(dir, "c.json")
	os.WriteFile(txt, text, 0o644)
	os.WriteFile(cfg, []byte(trainCfg), 0o644)
	quiet(t)

	a := filepath.Join(dir, "a")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", txt, "--out", a}); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(a, "metrics.jsonl"))
	if n := strings.Count(string(m), `"loss"`); n != 4 {
		t.Errorf("%d loss lines in metrics, want 4 (steps 2, 3, 4, 6: log_every 2, eval_every 3):\n%s", n, m)
	}
	if n := strings.Count(string(m), `"val_loss"`); n != 2 {
		t.Errorf("%d validation lines, want 2", n)
	}

	b := filepath.Join(dir, "b")
	ctx := &stopAfter{Context: context.Background(), n: 3}
	if err := runTrain(ctx, []string{"--config", cfg, "--data", txt, "--out", b}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", txt, "--out", b}); err == nil {
		t.Error("second run into a used --out without --resume: want error")
	}
	st, err := os.ReadFile(filepath.Join(b, "ckpt", "00000003", "state.json"))
	if err != nil || !strings.Contains(string(st), `"step": 3`) {
		t.Fatalf("interrupted run's checkpoint state (%v):\n%s", err, st)
	}
	if want := fmt.Sprintf(`"version": %q`, version.Get().String()); !strings.Contains(string(st), want) {
		t.Errorf("checkpoint state without %s:\n%s", want, st)
	}
	if err := runTrain(context.Background(), []string{"--resume", "--data", txt, "--out", b}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"weights.safetensors", "optim.safetensors"} {
		x, _ := os.ReadFile(filepath.Join(a, "ckpt", "00000006", f))
		y, _ := os.ReadFile(filepath.Join(b, "ckpt", "00000006", f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
}

// stopAfter is a context that reports cancellation from its (n+1)-th Err
// call on: runTrain checks Err once per step, so it stops after n steps.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// quiet sends stdout to /dev/null for the test (train prints the config).
func quiet(t *testing.T) {
	old := os.Stdout
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout = f
	t.Cleanup(func() { os.Stdout = old; f.Close() })
}

// TestEvaluationAgrees: train's last validation figure, `tokenmix eval` on
// the same split in the same window mode, and the arena's figures agree to
// 1e-6.
//   - Text: train on a directory of text, then eval --data on it with
//     --split val --context 0 (fixed windows of seq_len, as train
//     validates; eval_batches covers the split).
//   - A task: a tiny gosrc arena run by the CLI (one mixer, a Go tree the
//     test writes, sliding validation and test windows as the gosrc preset
//     has), then eval --task with the preset's task object on the arena's
//     run directory, --split val and test, against the arena's reported
//     val and test figures; and the same task through train --task, its
//     last validation figure against eval --task --split val.
func TestEvaluationAgrees(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(2, 2))
	corpus := filepath.Join(dir, "corpus")
	os.MkdirAll(corpus, 0o755)
	for _, f := range []string{"a.txt", "b.txt"} {
		text := make([]byte, 2000)
		for i := range text {
			text[i] = "abcdefgh \n"[rng.IntN(10)]
		}
		os.WriteFile(filepath.Join(corpus, f), text, 0o644)
	}
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(strings.Replace(trainCfg, `"eval_batches": 1`, `"eval_batches": 8`, 1)), 0o644)
	quiet(t)
	out := filepath.Join(dir, "run")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", corpus, "--out", out}); err != nil {
		t.Fatal(err)
	}
	all, _ := data.ReadText(corpus)
	c, _ := data.SplitText(all, 0.05)
	w, err := data.NewWindows(data.BytesText(c.Val), 16, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() > 2*8 {
		t.Fatalf("%d validation windows: more than eval_batches·batch_size, train scores only some", w.Len())
	}
	ev := evalJSON(t, dir, "--run", out, "--data", corpus, "--split", "val", "--context", "0")
	if ev.Inputs != len(c.Val)-1 || ev.Windows != w.Len() {
		t.Errorf("eval scored %d bytes in %d windows; the split has %d bytes in %d windows", ev.Inputs, ev.Windows, len(c.Val), w.Len())
	}
	if v := lastVal(t, out, "val_bits_per_byte"); math.Abs(v-ev.BitsPerByte) > 1e-6 {
		t.Errorf("text: bits per byte: train %.9f, eval %.9f", v, ev.BitsPerByte)
	}

	// The gosrc arena.
	taskJS := goTree(t, filepath.Join(dir, "gotree"))
	task := map[string]json.RawMessage{}
	json.Unmarshal([]byte(taskJS), &task)
	delete(task, "name")
	gs, err := data.NewTask("gosrc", task, "")
	if err != nil {
		t.Fatal(err)
	}
	const batch, evalBatches = 8, 64
	if n := gs.Len(data.Val); n > batch*evalBatches {
		t.Fatalf("%d validation windows: more than eval_batches·batch_size", n)
	}
	preset := `{"task": ` + taskJS + `,
 "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "causal": true},
 "train": {"batch_size": 8, "lr": 0.01, "warmup": 1, "seed": 1, "log_every": 1, "eval_every": 3, "eval_batches": 64},
 "budget": "6", "mixers": ["full"]}`
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(preset), 0o644)
	r := cli(t, dir, "arena", "--preset", "p.json", "--out", "arena", "--json")
	var res struct {
		Status    string
		Steps     int
		Test, Val float64
		TestLoss  float64 `json:"test_loss"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || res.Status != "done" || res.Steps != 6 {
		t.Fatalf("arena: exit %d, %v, result %+v\n%s%s", r.code, err, res, r.stdout, r.stderr)
	}
	arenaRun := filepath.Join(dir, "arena", "runs", "full")
	for _, sp := range []struct {
		split string
		s     data.Split
		want  float64
	}{{"val", data.Val, res.Val}, {"test", data.Test, res.Test}} {
		ev := evalJSON(t, dir, "--run", arenaRun, "--task", taskJS, "--split", sp.split)
		if ev.Windows != gs.Len(sp.s) {
			t.Errorf("arena %s: eval scored %d windows, the split has %d", sp.split, ev.Windows, gs.Len(sp.s))
		}
		if math.Abs(ev.BitsPerByte-sp.want) > 1e-6 {
			t.Errorf("arena %s: bits per byte: arena %.9f, eval %.9f", sp.split, sp.want, ev.BitsPerByte)
		}
		if sp.s == data.Test && math.Abs(ev.Loss-res.TestLoss) > 1e-6 {
			t.Errorf("arena test loss %.9f, eval %.9f", res.TestLoss, ev.Loss)
		}
	}

	// A task the model does not fit.
	if r := cli(t, dir, "eval", "--run", arenaRun, "--task", "recall"); r.code != 1 || !strings.Contains(r.stderr, "eval --task recall: the config's max_len 16 is below the task's 256") {
		t.Errorf("eval --task recall on a gosrc model: exit %d, stderr %q", r.code, r.stderr)
	}

	// The same task through train --task.
	gcfg := strings.NewReplacer(`"batch_size": 2`, `"batch_size": 8`, `"eval_batches": 1`, `"eval_batches": 64`).Replace(trainCfg)
	os.WriteFile(cfg, []byte(gcfg), 0o644)
	tout := filepath.Join(dir, "gosrc-run")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--task", taskJS, "--out", tout}); err != nil {
		t.Fatal(err)
	}
	ev = evalJSON(t, dir, "--run", tout, "--task", taskJS, "--split", "val")
	if v := lastVal(t, tout, "val_bits_per_byte"); math.Abs(v-ev.BitsPerByte) > 1e-6 {
		t.Errorf("train --task: bits per byte: train %.9f, eval %.9f", v, ev.BitsPerByte)
	}
}

// evalJSON runs tokenmix eval --json with args.
func evalJSON(t *testing.T, dir string, args ...string) evalResult {
	t.Helper()
	r := cli(t, dir, append(append([]string{"eval"}, args...), "--json")...)
	var ev evalResult
	if err := json.Unmarshal([]byte(r.stdout), &ev); r.code != 0 || err != nil {
		t.Fatalf("eval %q: exit %d, %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
	}
	return ev
}

// lastVal returns the last value of key in run directory dir's metrics.
func lastVal(t *testing.T, dir, key string) float64 {
	t.Helper()
	d, err := run.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	v := math.NaN()
	for _, m := range ms {
		if x, ok := m[key].(float64); ok {
			v = x
		}
	}
	return v
}

// goTree writes a small Go source tree under root, twelve package
// directories of Go-like code, and returns the gosrc task object reading
// it: windows of 16 bytes, validation and test windows sliding with at
// least 4 bytes of context (eval_context), as the gosrc preset does. Every
// split gets at least one package.
func goTree(t *testing.T, root string) string {
	t.Helper()
	var got [3]int
	for p := range 12 {
		dir := fmt.Sprintf("pkg%02d", p)
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		var b strings.Builder
		fmt.Fprintf(&b, "package %s\n\n", dir)
		for k := range 12 {
			fmt.Fprintf(&b, "func f%d(x int) int { return x*%d + %d }\n", k, k+p, p)
		}
		os.WriteFile(filepath.Join(root, dir, "a.go"), []byte(b.String()), 0o644)
		got[data.GoSrcSplit(dir, 30, 30)]++
	}
	if got[0] == 0 || got[1] == 0 || got[2] == 0 {
		t.Fatalf("packages per split %v: one is empty", got)
	}
	r, _ := json.Marshal(root)
	return `{"name": "gosrc", "root": ` + string(r) + `, "seq_len": 16, "val_percent": 30, "test_percent": 30, "eval_context": 4}`
}

// TestEvalTextDirectory: eval --data reads what train --data reads, a
// text file or a directory of them (concatenated in path order, each
// followed by a newline): the directory scores as the file of its bytes.
func TestEvalTextDirectory(t *testing.T) {
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "d", "a.txt"), []byte("the quick brown fox jumps over the lazy dog."), 0o644)
	os.WriteFile(filepath.Join(dir, "d", "sub", "b.txt"), []byte("the lazy dog sleeps, and the fox runs away."), 0o644)
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("the quick brown fox jumps over the lazy dog.\nthe lazy dog sleeps, and the fox runs away.\n"), 0o644)
	var got [2]string
	for i, p := range []string{"d", "f.txt"} {
		r := cli(t, dir, "eval", "--run", fox, "--data", p, "--context", "8")
		if r.code != 0 {
			t.Fatalf("eval --data %s: exit %d\n%s", p, r.code, r.stderr)
		}
		got[i] = r.stdout
	}
	if got[0] != got[1] || !strings.Contains(got[0], "88 bytes in") {
		t.Errorf("directory: %q, file: %q", got[0], got[1])
	}
	for _, args := range [][]string{{"--split", "test"}, {"--split", "val", "--val-frac", "1"}} {
		r := cli(t, dir, append([]string{"eval", "--run", fox, "--data", "d"}, args...)...)
		if r.code == 0 {
			t.Errorf("eval %q: exit 0, want an error", args)
		}
	}
}

// TestTrainTask trains on a task of the task list (recall, from its JSON
// object): the metrics carry the task's validation metric; a config that
// does not fit the task, and --task with --data, are errors.
func TestTrainTask(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(trainCfg), 0o644)
	quiet(t)
	recall := `{"name": "recall", "len": 16, "pairs": 3, "keys": 8, "values": 4, "train": 64, "val": 8, "test": 8}`
	out := filepath.Join(dir, "run")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--task", recall, "--out", out}); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if n := strings.Count(string(m), `"val_accuracy"`); n != 2 {
		t.Errorf("%d lines with val_accuracy, want 2:\n%s", n, m)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--task", strings.Replace(recall, `"len": 16`, `"len": 32`, 1)}, "max_len"},
		{[]string{"--task", `{"name": "recall", "lenn": 16}`}, "task.lenn"},
		{[]string{"--task", "nosuch"}, "unknown task"},
		{[]string{"--task", "recall", "--data", cfg}, "want tokenmix train"},
	} {
		args := append([]string{"--config", cfg, "--out", filepath.Join(dir, "x")}, tc.args...)
		if err := runTrain(context.Background(), args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
}

// TestCLITrainOverBudget: a config whose plan is far over --max-memory
// (T=65536, full attention, batch 64, 4 GiB) exits 1 before allocating
// more than 100 MiB, naming the largest tensors and what fits, and leaves
// no run directory.
func TestCLITrainOverBudget(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256, "max_len": 65536,
		"mixer": {"kind": "full"}, "train": {"batch_size": 64, "steps": 10}}`
	text := strings.Repeat("package main\n\nfunc main() { println(\"hello\") }\n", 3000) // 150 KB
	for name, s := range map[string]string{"cfg.json": cfg, "a.txt": text} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "train", "--config", "cfg.json", "--data", "a.txt", "--out", "run", "--max-memory", "4GiB")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	// The plan's scratch depends on the thread count, the rest not.
	for _, want := range []string{"the memory plan at batch 64, length 65536 needs ", " GiB, over the memory budget of 4.00 GiB",
		"largest: ", "ff.fc1 2 × 4.00 GiB", "within the budget: batch_size ", ", or max_len "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 100<<10 { // KiB
		t.Errorf("peak RSS %d KiB, over 100 MiB", ru.Maxrss)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("a refused run left %s/run (%v)", dir, err)
	}
}
