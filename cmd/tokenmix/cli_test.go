package main

import (
	"bytes"
	stdctx "context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// The tests in this file run the tokenmix binary, built once by TestMain,
// and check the conventions of the command table in main.go.

var (
	binary     string
	vcsStamped = true // the binary was built with -buildvcs=auto
)

func TestMain(m *testing.M) {
	if code, ok := tmpfsChild(); ok {
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "tokenmix-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "tokenmix")
	// -buildvcs=auto stamps the revision when git and the repository are
	// there (TestCLIVersion then checks it), whatever GOFLAGS says; where
	// git cannot read the repository the binary is built without.
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.Command(goCmd, "build", "-buildvcs=auto", "-o", binary, ".").CombinedOutput(); err != nil {
		if out, err := exec.Command(goCmd, "build", "-buildvcs=false", "-o", binary, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building tokenmix: %v\n%s", err, out)
			os.Exit(1)
		}
		vcsStamped = false
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the tokenmix binary in dir (a temporary directory when empty).
func cli(t *testing.T, dir string, args ...string) result {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("tokenmix %q: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), o.String(), e.String()}
}

// commandNames lists every leaf command as its words: "train", "bench gemm".
func commandNames() [][]string {
	var out [][]string
	for _, n := range sortedNames(commands()) {
		out = append(out, []string{n})
	}
	for _, n := range sortedNames(benchCommands()) {
		out = append(out, []string{"bench", n})
	}
	return out
}

func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"-h"}, {"--help"}, {"help"}} {
		r := cli(t, "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: tokenmix [--threads N] <command>") || r.stderr != "" {
			t.Errorf("tokenmix %q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, name := range commandNames() {
		want := "usage: tokenmix " + strings.Join(name, " ") + " "
		for _, args := range [][]string{
			append(append([]string{}, name...), "-h"),
			append(append([]string{}, name...), "--help"),
			append([]string{"help"}, name...),
		} {
			r := cli(t, "", args...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, want) || r.stderr != "" {
				t.Errorf("tokenmix %q: exit %d, stderr %q, stdout:\n%s", args, r.code, r.stderr, r.stdout)
			}
		}
	}
	if r := cli(t, "", "help", "nosuch"); r.code != 2 || r.stdout != "" {
		t.Errorf("help nosuch: exit %d, stdout %q", r.code, r.stdout)
	}
}

// usageError checks a usage error: exit 2, nothing on stdout, one line on
// stderr that contains want.
func checkUsageError(t *testing.T, r result, args []string, want string) {
	t.Helper()
	if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("tokenmix %q: exit %d, stdout %q, stderr %q (want exit 2 and one line naming %q)", args, r.code, r.stdout, r.stderr, want)
	}
}

// speedConfig is the benchmark config, by absolute path (cli runs in a
// temporary directory).
var speedConfig, _ = filepath.Abs("../../scripts/speed_d256.json")

func TestCLIUsageErrors(t *testing.T) {
	for _, name := range commandNames() {
		args := append(append([]string{}, name...), "--no-such-flag")
		want := "no-such-flag"
		if len(name) == 1 && name[0] == "bench" {
			want = "unknown benchmark"
		}
		dir := t.TempDir()
		checkUsageError(t, cli(t, dir, args...), args, want)
		if es, _ := os.ReadDir(dir); len(es) > 0 {
			t.Errorf("tokenmix %q wrote %d files", args, len(es))
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "unknown command"},
		{[]string{"--threads", "0", "version"}, "--threads"},
		{[]string{"init"}, "want tokenmix init --config"},
		{[]string{"bench"}, "want one of"},
		{[]string{"bench", "mixer"}, "want tokenmix bench mixer --config"},
		{[]string{"version", "extra"}, "want tokenmix version"},
		{[]string{"arena", "--preset", "nosuch"}, "unknown preset"},
		{[]string{"arena", "--task", "nosuch"}, "unknown task"},
		{[]string{"arena", "--budget", "soon"}, "budget"},
		{[]string{"bench", "gemm", "--reps", "x"}, "invalid value"},
		{[]string{"bench", "scaling", "--mixers", "full,nosuch"}, `"nosuch"`},
		{[]string{"bench", "scaling", "--preset", "nosuch"}, "unknown preset"},
		{[]string{"bench", "scaling", "--min-len", "0"}, "--min-len"},
		{[]string{"train", "--config", speedConfig, "--data", speedConfig, "--out", "r", "--precision", "half"}, `precision: must be "fp32", "bf16" or "fp16", got "half"`},
		{[]string{"train", "--data", speedConfig, "--out", "r", "--resume", "--precision", "bf16"}, "--precision is a new run's"},
		{[]string{"train", "--data", speedConfig, "--out", "r", "--on-save-error", "retry"}, `train: --on-save-error "retry": want stop or continue`},
		{[]string{"bench", "train", "--config", speedConfig, "--len", "8", "--precision", "fp8"}, `got "fp8"`},
		{[]string{"arena", "--precision", "half"}, `arena --precision: must be "fp32", "bf16" or "fp16", got "half"`},
		{[]string{"eval", "--run", "r", "--data", "t.txt", "--task", "recall"}, "want tokenmix eval"},
		{[]string{"eval", "--run", "r", "--task", "recall", "--context", "4"}, "eval --task: --context and --val-frac apply to --data text"},
		{[]string{"eval", "--run", "r", "--task", "recall", "--split", "all"}, `eval --task: --split: want train, val or test, got "all"`},
	} {
		dir := t.TempDir()
		checkUsageError(t, cli(t, dir, c.args...), c.args, c.want)
		if es, _ := os.ReadDir(dir); len(es) > 0 {
			t.Errorf("tokenmix %q wrote %d files", c.args, len(es))
		}
	}
}

// TestCLIBenchTrainCPUProfile: --cpuprofile writes the timed steps' CPU
// profile (gzipped pprof) and prints the profile's breakdown; a file that
// cannot be created fails before measuring, naming it.
func TestCLIBenchTrainCPUProfile(t *testing.T) {
	dir := t.TempDir()
	r := cli(t, dir, "bench", "train", "--config", speedConfig, "--len", "8", "--reps", "3", "--cpuprofile", "step.pprof")
	if r.code != 0 || !strings.Contains(r.stdout, "profile of the 3 timed steps") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "step.pprof"))
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("step.pprof: %d bytes (%v), want a gzipped profile", len(b), err)
	}
	dir = t.TempDir()
	r = cli(t, dir, "bench", "train", "--config", speedConfig, "--len", "8", "--cpuprofile", "nodir/step.pprof")
	if r.code == 0 || !strings.Contains(r.stderr, "nodir") || strings.Contains(r.stdout, "ms/step") {
		t.Errorf("an uncreatable profile file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if es, _ := os.ReadDir(dir); len(es) > 0 {
		t.Errorf("the failed run wrote %s", es[0].Name())
	}
}

// TestCLIArenaUnknownMixer: a misspelt --mixers name is a usage error and
// nothing is written.
func TestCLIArenaUnknownMixer(t *testing.T) {
	dir := t.TempDir()
	args := []string{"arena", "--mixers", "full,nosuch", "--out", "out"}
	checkUsageError(t, cli(t, dir, args...), args, `"nosuch"`)
	if es, _ := os.ReadDir(dir); len(es) > 0 {
		t.Errorf("arena with an unknown mixer wrote %s", es[0].Name())
	}
}

// failingPreset trains a tiny recall task at a learning rate that makes the
// loss NaN on the first step.
const failingPreset = `{
  "task": {"name": "recall", "len": 16, "pairs": 3, "keys": 8, "values": 4, "train": 64, "val": 8, "test": 8},
  "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16},
  "train": {"batch_size": 4, "lr": 1e30, "warmup": 1, "seed": 1, "log_every": 1, "eval_every": 2, "eval_batches": 1},
  "budget": "4",
  "mixers": ["aft_simple"]
}`

func TestCLIArenaFailedMixer(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(failingPreset), 0o644)
	r := cli(t, dir, "arena", "--preset", "p.json", "--out", "out", "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "1 mixer run(s) failed: aft_simple") {
		t.Errorf("arena with a diverging mixer: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// --json: stdout holds one result object per mixer, nothing else.
	var res struct{ Mixer, Status string }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Mixer != "aft_simple" || res.Status != "failed" {
		t.Errorf("arena --json stdout %q: %v", r.stdout, err)
	}
}

func TestCLIMixers(t *testing.T) {
	r := cli(t, "", "mixers", "--json")
	if r.code != 0 {
		t.Fatalf("mixers --json: exit %d: %s", r.code, r.stderr)
	}
	got := map[string]mixerInfo{}
	for _, in := range jsonLines[mixerInfo](t, r.stdout) {
		got[in.Name] = in
	}
	all := registry.All()
	if len(got) != len(all) || len(all) != 11 {
		t.Errorf("mixers --json lists %d kinds, the registry %d, want 11", len(got), len(all))
	}
	for _, k := range all {
		in, ok := got[k.Name]
		if !ok || in.Paper != k.Paper || in.Causal != k.Causal || in.Bidirectional != k.Bidirectional || in.KeyPadding != k.KeyPadding {
			t.Errorf("%s: listed as %+v", k.Name, in)
		}
	}
	// Options as the constructors read them (docs/model.md lists the same).
	for _, c := range []struct {
		kind, key, typ string
		def            any
		from           string
		required       bool
	}{
		{"full", "alibi", "boolean", false, "", false},
		{"full", "rope", "boolean", false, "", false},
		{"strided", "rope_base", "number", float64(10000), "", false},
		{"lsh", "rope", "boolean", false, "", false},
		{"entmax", "rope_base", "number", float64(10000), "", false},
		{"strided", "block", "integer", nil, "", true},
		{"fixed", "summary", "integer", nil, "", true},
		{"fixed", "combine", "string", "merge", "", false},
		{"topk", "k", "integer", float64(8), "", false},
		{"entmax", "alpha", "number", 1.5, "", false},
		{"lsh", "bucket_size", "integer", float64(64), "", false},
		{"aft_conv", "heads", "integer", nil, "n_heads", false},
		{"fnet", "method", "string", "auto", "", false},
	} {
		var found bool
		for _, o := range got[c.kind].Options {
			if o.Key == c.key {
				found = true
				if o.Type != c.typ || o.Default != c.def || o.DefaultFrom != c.from || o.Required != c.required {
					t.Errorf("%s option %s: %+v", c.kind, c.key, o)
				}
			}
		}
		if !found {
			t.Errorf("%s: option %s not listed (%+v)", c.kind, c.key, got[c.kind].Options)
		}
	}
	if n := len(got["aft_simple"].Options); n != 0 {
		t.Errorf("aft_simple lists %d options, has none", n)
	}
	if r := cli(t, "", "mixers"); r.code != 0 || !strings.Contains(r.stdout, `"mixer": {"kind": "strided", "block": <integer>}`) {
		t.Errorf("mixers: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

func TestCLIPresets(t *testing.T) {
	r := cli(t, "", "presets", "--json")
	if r.code != 0 {
		t.Fatalf("presets --json: exit %d: %s", r.code, r.stderr)
	}
	names := map[string]bool{}
	for _, p := range jsonLines[presetInfo](t, r.stdout) {
		if p.Task == "" || p.Time == "" || p.Description == "" {
			t.Errorf("preset %+v", p)
		}
		names[p.Name] = true
	}
	for _, n := range []string{"recall", "listops", "fmnist", "gosrc"} {
		if !names[n] {
			t.Errorf("preset %s not listed", n)
		}
	}
}

func TestCLIVersion(t *testing.T) {
	r := cli(t, "", "version", "--json")
	var v struct{ Module, Version, Revision, Go string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Module != "github.com/tokenmix/tokenmix" || v.Version == "" || v.Go != runtime.Version() {
		t.Fatalf("version --json: exit %d, %q", r.code, r.stdout)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || !vcsStamped {
		t.Logf("git cannot read the repository here (%v): revision not checked", err)
	} else if want := strings.TrimSpace(string(head)); v.Revision != want {
		t.Errorf("version: revision %q, want %q", v.Revision, want)
	}
	r = cli(t, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "github.com/tokenmix/tokenmix "+v.Version+"\n") {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
}

// signalCfg trains long enough (1200 steps of about a millisecond) for a
// signal to land mid-run, with one periodic checkpoint at step 400.
const signalCfg = `{"vocab_size": 256, "d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64, "max_len": 32,
 "causal": true, "task": "lm", "mixer": {"kind": "full"},
 "train": {"batch_size": 4, "steps": 1200, "lr": 0.003, "warmup": 10, "log_every": 1, "eval_every": 0,
  "checkpoint_every": 400, "seed": 4}}`

// TestCLITrainSignals stops `tokenmix train` with SIGINT and SIGTERM at a
// random step before the first periodic checkpoint, and with SIGKILL after
// it. SIGINT and SIGTERM exit 130 and 143 with a checkpoint at the step
// reached; SIGKILL leaves the periodic one. Every interrupted run, resumed,
// ends with the same bytes as an uninterrupted run.
func TestCLITrainSignals(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	text := make([]byte, 8000)
	for i := range text {
		text[i] = "abcdefgh \n"[rng.IntN(10)]
	}
	os.WriteFile(filepath.Join(dir, "t.txt"), text, 0o644)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(signalCfg), 0o644)
	final := func(run, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, run, "ckpt", "00001200", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if r := cli(t, dir, "train", "--config", "c.json", "--data", "t.txt", "--out", "ref"); r.code != 0 {
		t.Fatalf("uninterrupted train: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		sig   syscall.Signal
		code  int // -1: killed
		after int // signal once this many steps are logged
	}{
		{syscall.SIGINT, 130, 10 + rng.IntN(290)},
		{syscall.SIGTERM, 143, 10 + rng.IntN(290)},
		{syscall.SIGKILL, -1, 450},
	} {
		out := c.sig.String()
		got, _, stderr := signalAfter(t, dir, filepath.Join(out, "metrics.jsonl"), c.after, c.sig,
			"train", "--config", "c.json", "--data", "t.txt", "--out", out)
		if got != c.code {
			t.Fatalf("%v after step %d: exit %d, want %d\n%s", c.sig, c.after, got, c.code, stderr)
		}
		steps := checkpoints(t, filepath.Join(dir, out))
		switch {
		case c.sig == syscall.SIGKILL && (len(steps) != 1 || steps[0] != 400):
			t.Errorf("%v after step %d: checkpoints %v, want [400]", c.sig, c.after, steps)
		case c.sig != syscall.SIGKILL && (len(steps) != 1 || steps[0] < c.after || steps[0] >= 400):
			t.Errorf("%v after step %d: checkpoints %v, want one at the step reached, before 400", c.sig, c.after, steps)
		}
		t.Logf("%v after step %d: checkpoints %v", c.sig, c.after, steps)
		r := cli(t, dir, "train", "--resume", "--data", "t.txt", "--out", out)
		if r.code != 0 {
			t.Fatalf("%v: resume: exit %d\n%s", c.sig, r.code, r.stderr)
		}
		for _, name := range []string{"weights.safetensors", "optim.safetensors"} {
			if !bytes.Equal(final(out, name), final("ref", name)) {
				t.Errorf("%v: resumed %s differs from the uninterrupted run's", c.sig, name)
			}
		}
		// The resumed run logged every step once.
		b, _ := os.ReadFile(filepath.Join(dir, out, "metrics.jsonl"))
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m struct{ Step int }
			if json.Unmarshal([]byte(line), &m); m.Step != i+1 {
				t.Errorf("%v: metrics line %d is step %d", c.sig, i+1, m.Step)
				break
			}
		}
	}
}

// jsonLines decodes each line of stdout as a T.
func jsonLines[T any](t *testing.T, stdout string) []T {
	t.Helper()
	var out []T
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// signalAfter runs the binary with args in dir, sends sig once the file
// metrics (a path under dir) has n lines, and returns the exit code (−1
// when the signal killed it), stdout and stderr. A process still running
// a minute after the start is killed.
func signalAfter(t *testing.T, dir, metrics string, n int, sig os.Signal, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer kill.Stop()
	waitLines(filepath.Join(dir, metrics), n)
	cmd.Process.Signal(sig)
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// waitLines returns once the file at path has n lines (a training run's
// metrics.jsonl: n steps logged), or after a minute.
func waitLines(path string, n int) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(path); bytes.Count(b, []byte("\n")) >= n {
			return
		}
	}
}

// checkpoints lists the step directories under run/ckpt.
func checkpoints(t *testing.T, run string) []int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(run, "ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, e := range es {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Errorf("%s: unexpected entry %s", run, e.Name())
			continue
		}
		steps = append(steps, n)
	}
	return steps
}

// TestCLIArenaSignal stops an arena whose mixer trains in a worker process:
// the worker saves a checkpoint in its run directory and the arena exits
// 143; the same command then resumes and finishes the run.
func TestCLIArenaSignal(t *testing.T) {
	dir := t.TempDir()
	preset := strings.NewReplacer(`"lr": 1e30`, `"lr": 1e-3`, `"budget": "4"`, `"budget": "20000"`).Replace(failingPreset)
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(preset), 0o644)
	args := []string{"arena", "--preset", "p.json", "--out", "out"}
	// Signal once the worker has logged its tenth step.
	got, _, stderr := signalAfter(t, dir, filepath.Join("out", "runs", "aft_simple", "metrics.jsonl"), 10, syscall.SIGTERM, args...)
	if got != 143 || strings.Count(stderr, "tokenmix:") != 1 || !strings.Contains(stderr, "rerun the same command to resume") {
		t.Fatalf("arena after SIGTERM: exit %d (want 143), stderr:\n%s", got, stderr)
	}
	steps := checkpoints(t, filepath.Join(dir, "out", "runs", "aft_simple"))
	if len(steps) != 1 || steps[0] < 10 || steps[0] >= 20000 {
		t.Fatalf("the worker's checkpoints: %v", steps)
	}
	r := cli(t, dir, args...)
	var res struct{ Steps int }
	b, _ := os.ReadFile(filepath.Join(dir, "out", "runs", "aft_simple", "result.json"))
	if json.Unmarshal(b, &res); r.code != 0 || res.Steps != 20000 {
		t.Errorf("resumed arena: exit %d, %d steps (stopped at %d)\n%s", r.code, res.Steps, steps[0], r.stderr)
	}
}

// TestCLIRunDirectories: a train run and an arena run are the same kind of
// directory. run.LoadModel loads both; grad reads DIR/config.json with a
// checkpoint's weights; export writes a model that loads too.
func TestCLIRunDirectories(t *testing.T) {
	dir := t.TempDir()
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 100)
	os.WriteFile(filepath.Join(dir, "t.txt"), text, 0o644)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(trainCfg), 0o644)
	if r := cli(t, dir, "train", "--config", "c.json", "--data", "t.txt", "--out", "trained"); r.code != 0 {
		t.Fatalf("train: exit %d\n%s", r.code, r.stderr)
	}
	preset := strings.NewReplacer(`"lr": 1e30`, `"lr": 1e-3`, `"budget": "4"`, `"budget": "8"`).Replace(failingPreset)
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(preset), 0o644)
	if r := cli(t, dir, "arena", "--preset", "p.json", "--out", "arena"); r.code != 0 {
		t.Fatalf("arena: exit %d\n%s", r.code, r.stderr)
	}
	batch := safetensors.New()
	batch.SetI32("tokens", []int{2, 8}, []int32{1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7, 1, 2})
	batch.SetI32("targets", []int{2, 8}, []int32{2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3})
	if err := batch.WriteFile(filepath.Join(dir, "b.safetensors")); err != nil {
		t.Fatal(err)
	}
	for _, rd := range []string{"trained", filepath.Join("arena", "runs", "aft_simple")} {
		path := filepath.Join(dir, rd)
		if _, err := run.LoadModel(path, -1); err != nil {
			t.Errorf("%s: LoadModel: %v", rd, err)
		}
		steps := checkpoints(t, path)
		w := filepath.Join(rd, "ckpt", fmt.Sprintf("%08d", steps[len(steps)-1]), "weights.safetensors")
		r := cli(t, dir, "grad", "--config", filepath.Join(rd, "config.json"), "--weights", w, "--batch", "b.safetensors", "--out", "g.safetensors")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "loss ") {
			t.Errorf("%s: grad: exit %d\n%s%s", rd, r.code, r.stdout, r.stderr)
		}
		exported := filepath.Join(dir, strings.ReplaceAll(rd, "/", "-")+".model")
		if r := cli(t, dir, "export", "--run", rd, "--out", exported, "--dtype", "bf16"); r.code != 0 {
			t.Errorf("%s: export: exit %d\n%s", rd, r.code, r.stderr)
		}
		if _, err := run.LoadModel(exported, -1); err != nil {
			t.Errorf("%s: exported model: %v", rd, err)
		}
	}
}

// TestCLIEvalMatchesScore: eval's bits per byte on a text longer than one
// window equals the mean over the same windows of the API's log-softmax of
// its logits, taking each byte from the window that scores it.
func TestCLIEvalMatchesScore(t *testing.T) {
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog. the lazy dog sleeps. a quick brown dog jumps over the fox, and the fox runs."
	os.WriteFile(filepath.Join(dir, "t.txt"), []byte(text), 0o644)
	const context = 16
	r := cli(t, dir, "eval", "--run", fox, "--data", "t.txt", "--context", strconv.Itoa(context), "--json")
	var ev struct {
		Inputs, Windows int
		BitsPerByte     float64 `json:"bits_per_byte"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); r.code != 0 || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	m, err := tokenmix.Load(fox)
	if err != nil {
		t.Fatal(err)
	}
	W := m.Config().SeqLen // tokens, and so predictions, per window
	S := W - context
	V := m.Config().VocabSize
	ids := m.Encode(text)
	var nats float64
	for p := 1; p < len(ids); p++ { // the byte at p, predicted from the bytes before it
		lo := 0
		if p > W {
			lo = (p - W + S - 1) / S * S // the first window whose predictions reach p
		}
		lg, err := m.Logits(stdctx.Background(), [][]int32{ids[lo:min(lo+W, len(ids)-1)]})
		if err != nil {
			t.Fatal(err)
		}
		if lo > 0 && p-1-lo < context {
			t.Fatalf("byte %d scored with %d bytes of context", p, p-1-lo)
		}
		row := lg.Data[(p-1-lo)*V : (p-lo)*V]
		var z float64
		for _, v := range row {
			z += math.Exp(float64(v))
		}
		nats -= float64(row[ids[p]]) - math.Log(z)
	}
	want := nats / float64(len(ids)-1) / math.Ln2
	if ev.Inputs != len(ids)-1 || ev.Windows < 2 || math.Abs(ev.BitsPerByte-want) > 1e-6*want {
		t.Errorf("eval: %d bytes in %d windows, %.9f bits per byte; Logits: %d bytes, %.9f", ev.Inputs, ev.Windows, ev.BitsPerByte, len(ids)-1, want)
	}
}

// TestCLIDataErrors: train, predict and eval name the file, the line and the
// problem of bad input, and write nothing.
func TestCLIDataErrors(t *testing.T) {
	cls := `{"vocab_size": 260, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 8, "pad_id": 256,
	 "task": "classify", "n_classes": 2, "mixer": {"kind": "full"}, "train": {"steps": 2}}`
	good := "{\"text\": \"ab\", \"label\": \"x\"}\n{\"text\": \"cd\", \"label\": \"y\"}\n{\"text\": \"e\", \"label\": \"x\"}\n"
	for _, c := range []struct {
		name, cfg, data, want string
	}{
		{"malformed line", cls, good + "{\"text\": \"ab\", \"label\": \"x\"\n", "d.jsonl:4: not a JSON object"},
		{"field type", cls, good + "{\"text\": [1], \"label\": \"x\"}\n", `d.jsonl:4: "text": want a string, got [1]`},
		{"label type", cls, good + "{\"text\": \"a\", \"label\": {}}\n", `d.jsonl:4: "label": want a string or an integer`},
		{"no label", cls, good + "{\"tokens\": [1]}\n", `d.jsonl:4: no "label"`},
		{"out of vocabulary", cls, good + "{\"tokens\": [1, 999], \"label\": \"x\"}\n", "d.jsonl:4: token 999 outside the vocabulary [0, 260)"},
		{"too long", cls, good + "{\"text\": \"abcdefghi\", \"label\": \"y\"}\n", "d.jsonl:4: 9 tokens, longer than max_len 8"},
		{"empty", cls, good + "{\"text\": \"\", \"label\": \"y\"}\n", "d.jsonl:4: empty input"},
		{"pad_id in the byte range", strings.Replace(cls, `"pad_id": 256`, `"pad_id": 32`, 1), good, "d.jsonl:1: text input needs a pad_id outside the byte range 0–255"},
		{"classes", strings.Replace(cls, `"n_classes": 2`, `"n_classes": 3`, 1), good, "d.jsonl has 2 distinct labels (x, y), the config's n_classes is 3"},
		{"labels in an lm's JSONL", strings.Replace(strings.Replace(cls, `"classify", "n_classes": 2`, `"lm", "causal": true`, 1), `"pad_id": 256,`, "", 1), good, `d.jsonl:1: a "label" in an lm's lines`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "c.json"), []byte(c.cfg), 0o644)
		os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(c.data), 0o644)
		r := cli(t, dir, "train", "--config", "c.json", "--data", "d.jsonl", "--val", "d.jsonl", "--out", "run")
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", c.name, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
			t.Errorf("%s: the failed train wrote its run directory", c.name)
		}
	}
	// --val with an lm's text (not JSONL) is a usage error.
	lmDir := t.TempDir()
	os.WriteFile(filepath.Join(lmDir, "c.json"), []byte(strings.Replace(strings.Replace(cls, `"classify", "n_classes": 2`, `"lm", "causal": true`, 1), `"pad_id": 256,`, "", 1)), 0o644)
	os.WriteFile(filepath.Join(lmDir, "d.txt"), []byte(strings.Repeat("some text ", 50)), 0o644)
	checkUsageError(t, cli(t, lmDir, "train", "--config", "c.json", "--data", "d.txt", "--val", "d.txt", "--out", "run"), []string{"--val"}, "--val applies to JSONL lines")
	// predict and eval on the example classifier.
	spam, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "spam"))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("free cash\n"+strings.Repeat("x", 65)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "l.jsonl"), []byte("{\"text\": \"free cash\", \"label\": \"eggs\"}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--run", spam, "--input", "in.txt"}, "in.txt:2: 65 tokens, longer than max_len 64"},
		{[]string{"eval", "--run", spam, "--data", "l.jsonl"}, `l.jsonl:1: label "eggs" is not one of the model's classes`},
		{[]string{"eval", "--run", spam, "--data", "in.txt"}, "in.txt:1: not a JSON object"},
		{[]string{"predict", "--run", dir}, "config.json"},
	} {
		if r := cli(t, dir, c.args...); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, r.code, r.stderr, c.want)
		}
	}
	r := cli(t, dir, "predict", "--run", spam, "--input", filepath.Join(dir, "l.jsonl"))
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"spam"`) {
		t.Errorf("predict: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// An accuracy of 0 is printed, not left out.
	os.WriteFile(filepath.Join(dir, "wrong.jsonl"), []byte("{\"text\": \"free cash prize\", \"label\": \"ham\"}\n"), 0o644)
	r = cli(t, dir, "eval", "--run", spam, "--data", "wrong.jsonl", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"accuracy":0`) {
		t.Errorf("eval with every answer wrong: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestCLIDataExport writes ListOps' validation split as JSONL and reads it
// back as training lines.
func TestCLIDataExport(t *testing.T) {
	dir := t.TempDir()
	if r := cli(t, dir, "data", "export", "--task", "listops", "--split", "val", "--out", "v.jsonl"); r.code != 0 {
		t.Fatalf("data export: exit %d\n%s", r.code, r.stderr)
	}
	recs, err := data.ReadRecords(filepath.Join(dir, "v.jsonl"), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if names := data.LabelNames(recs); len(recs) != 2000 || len(names) != 10 || names[9] != "9" {
		t.Errorf("%d lines, labels %v", len(recs), names)
	}
	if r := cli(t, dir, "data", "export", "--task", "nope"); r.code != 1 || !strings.Contains(r.stderr, `task.name: unknown task "nope"`) {
		t.Errorf("data export --task nope: exit %d, stderr %q", r.code, r.stderr)
	}
	// An lm task (mqar-style recall: pairs first, queries last) exports
	// tokens and targets, and tokenmix train reads them back as an lm's
	// .jsonl, scored by accuracy over the targets.
	recall := `{"name": "recall", "layout": "pairs_first", "len": 48, "pairs": 4, "queries": 4, "keys": 16, "values": 16, "train": 200, "val": 20, "test": 20}`
	if r := cli(t, dir, "data", "export", "--task", recall, "--split", "train", "--out", "r.jsonl"); r.code != 0 {
		t.Fatalf("data export recall: exit %d\n%s", r.code, r.stderr)
	}
	recs, err = data.ReadRecords(filepath.Join(dir, "r.jsonl"), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 200 || len(recs[0].Tokens) != 48 || len(recs[0].Targets) != 48 || recs[0].Targets[0] != -1 || recs[0].Targets[47] < 0 {
		t.Fatalf("recall: %d lines, first %+v", len(recs), recs[0])
	}
	os.WriteFile(filepath.Join(dir, "lm.json"), []byte(`{"vocab_size": 64, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 48,
		"causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {"batch_size": 4, "steps": 4, "eval_every": 2}}`), 0o644)
	if r := cli(t, dir, "train", "--config", "lm.json", "--data", "r.jsonl", "--out", "run"); r.code != 0 || !strings.Contains(r.stderr, "metric accuracy") {
		t.Fatalf("train on the exported recall lines: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run", "metrics.jsonl")); !strings.Contains(string(b), `"val_accuracy"`) {
		t.Errorf("metrics without val_accuracy:\n%s", b)
	}
	// A length curriculum over the task: 2 updates at T = 24, then 2 at
	// 48; over the exported lines, an error (they have their own lengths).
	os.WriteFile(filepath.Join(dir, "cur.json"), []byte(`{"vocab_size": 64, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 48,
		"causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {"batch_size": 4, "steps": 4, "log_every": 2, "eval_every": 2,
		"curriculum": [{"len": 24, "steps": 2}]}}`), 0o644)
	if r := cli(t, dir, "train", "--config", "cur.json", "--task", recall, "--out", "cur"); r.code != 0 {
		t.Fatalf("train --task with a curriculum: exit %d\n%s", r.code, r.stderr)
	}
	cd, err := run.Open(filepath.Join(dir, "cur"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cd.Metrics()
	if err != nil || len(ms) != 2 || ms[0]["tokens"] != 2.0*4*24 || ms[1]["tokens"] != 2.0*4*24+2*4*48 {
		t.Errorf("curriculum run's metrics lines: %v", ms)
	}
	if r := cli(t, dir, "train", "--config", "cur.json", "--data", "r.jsonl", "--out", "cur2"); r.code != 1 ||
		!strings.Contains(r.stderr, "train.curriculum needs data that has shorter forms") {
		t.Errorf("a curriculum over JSONL lines: exit %d, stderr %q", r.code, r.stderr)
	}
	checkUsageError(t, cli(t, dir, "data", "export", "--task", "fmnist", "--len", "100"), []string{"fmnist", "--len"}, "fixed length")
	// Pathfinder at 16×16 (--len 256 needs shorter contours than the
	// defaults, so its error names the key) and at 32×32, read back.
	if r := cli(t, dir, "data", "export", "--task", "pathfinder", "--len", "256"); r.code != 1 || !strings.Contains(r.stderr, "task.contour_len:") {
		t.Errorf("pathfinder --len 256: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := cli(t, dir, "data", "export", "--task", "pathfinder", "--len", "1024", "--split", "val", "--out", "p.jsonl"); r.code != 0 {
		t.Fatalf("data export pathfinder: exit %d\n%s", r.code, r.stderr)
	}
	recs, err = data.ReadRecords(filepath.Join(dir, "p.jsonl"), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if names := data.LabelNames(recs); len(recs) != 1000 || !slices.Equal(names, []string{"0", "1"}) || len(recs[0].Tokens) != 1024 {
		t.Errorf("pathfinder: %d lines, labels %v, %d tokens", len(recs), names, len(recs[0].Tokens))
	}
}

// TestCLIGenerate continues a prompt with the example lm, greedily, with a
// stop sequence, and as JSON.
func TestCLIGenerate(t *testing.T) {
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	r := cli(t, "", "generate", "--run", fox, "--prompt", "the quick", "--temperature", "0", "--max-tokens", "30", "--stop", "lazy")
	if r.code != 0 || r.stdout != " brown fox jumps over the \n" {
		t.Errorf("generate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = cli(t, "", "generate", "--run", fox, "--prompt", "the", "--temperature", "0", "--max-tokens", "3", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], `{"id":32,"log_prob":`) || !strings.Contains(lines[3], `"finish_reason":"length"`) {
		t.Errorf("generate --json: exit %d, stdout %q", r.code, r.stdout)
	}
	spam, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "spam"))
	if r := cli(t, "", "generate", "--run", spam, "--prompt", "x"); r.code != 1 || !strings.Contains(r.stderr, "streams need a causal lm") {
		t.Errorf("generate with a classifier: exit %d, %q", r.code, r.stderr)
	}
}

// waitReady waits up to 10 s for the server at addr to answer /readyz
// with 200, failing the test with its stderr otherwise.
func waitReady(t *testing.T, client *http.Client, addr string, stderr *bytes.Buffer) {
	t.Helper()
	for i := 0; ; i++ {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if i == 200 {
			t.Fatalf("the server did not become ready: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCLIServeSignal: SIGTERM or SIGINT while clients stream completions
// drains the server: every stream it had begun ends with [DONE], and the
// process exits 0.
func TestCLIServeSignal(t *testing.T) {
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(binary, "serve", "--run", "fox="+fox, "--addr", addr)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kill := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
		client := &http.Client{Transport: &http.Transport{}}
		waitReady(t, client, addr, &stderr)
		var mu sync.Mutex
		var ok, refused, unavailable int
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					body := fmt.Sprintf(`{"model": "fox", "prompt": "the %d", "max_tokens": 50, "seed": %d, "stream": true}`, c, i)
					resp, err := client.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
					if err != nil {
						mu.Lock()
						refused++
						mu.Unlock()
						time.Sleep(5 * time.Millisecond)
						continue
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					mu.Lock()
					switch {
					case resp.StatusCode == 503:
						unavailable++
					case resp.StatusCode != 200:
						t.Errorf("status %d: %s", resp.StatusCode, b)
					case err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n"):
						t.Errorf("a stream cut short (%v): %q", err, b)
					default:
						ok++
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		cmd.Process.Signal(sig)
		cmd.Wait()
		kill.Stop()
		close(stop)
		wg.Wait()
		client.CloseIdleConnections()
		if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(stderr.String(), "draining") {
			t.Errorf("%v: exit %d\n%s", sig, code, stderr.String())
		}
		if ok == 0 {
			t.Errorf("%v: no stream was served", sig)
		}
		t.Logf("%v: %d streams finished, %d answered 503, %d refused after the listener closed", sig, ok, unavailable, refused)
	}
}
