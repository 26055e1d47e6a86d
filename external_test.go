package tokenmix_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// spamHam writes n JSONL lines of a two-class task: a few common words with
// one or two words that only spam, or only ham, uses.
func spamHam(path string, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 2))
	spam := strings.Fields("win free prize cash offer click bonus winner")
	ham := strings.Fields("meeting lunch report team project notes call review")
	common := strings.Fields("the a you your now today please this for with")
	var b strings.Builder
	for range n {
		label, words := "spam", spam
		if rng.IntN(2) == 0 {
			label, words = "ham", ham
		}
		var line []string
		for range 2 + rng.IntN(4) {
			line = append(line, common[rng.IntN(len(common))])
		}
		for range 1 + rng.IntN(2) {
			i := rng.IntN(len(line) + 1)
			line = append(line[:i], append([]string{words[rng.IntN(len(words))]}, line[i:]...)...)
		}
		j, _ := json.Marshal(map[string]string{"text": strings.Join(line, " "), "label": label})
		b.Write(append(j, '\n'))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

const spamConfig = `{"vocab_size": 257, "d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64, "max_len": 64, "pad_id": 256,
 "task": "classify", "n_classes": 2, "mixer": {"kind": "full"},
 "train": {"batch_size": 16, "steps": 300, "lr": 0.003, "warmup": 20, "log_every": 50, "eval_every": 100, "seed": 1}}`

// TestExternalModule trains a classifier with `tokenmix train` on JSONL the
// test writes, checks it on its held-out lines with `tokenmix eval` and
// `tokenmix predict`, then builds and runs a separate Go module that
// imports github.com/tokenmix/tokenmix (replaced by this checkout), loads
// the run and classifies.
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "tokenmix")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "./cmd/tokenmix").CombinedOutput(); err != nil {
		t.Fatalf("building tokenmix: %v\n%s", err, out)
	}
	runIn := func(wd string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}
	if err := spamHam(filepath.Join(dir, "train.jsonl"), 1000, 1); err != nil {
		t.Fatal(err)
	}
	if err := spamHam(filepath.Join(dir, "val.jsonl"), 200, 2); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(spamConfig), 0o644)
	runIn(dir, bin, "train", "--config", "c.json", "--data", "train.jsonl", "--val", "val.jsonl", "--out", "run")

	var ev struct {
		Inputs   int
		Accuracy float64
	}
	json.Unmarshal([]byte(runIn(dir, bin, "eval", "--run", "run", "--data", "val.jsonl", "--json")), &ev)
	t.Logf("held-out accuracy %.2f%% on %d lines", 100*ev.Accuracy, ev.Inputs)
	if ev.Inputs != 200 || ev.Accuracy < 0.9 {
		t.Errorf("held-out accuracy %.4f on %d lines, want ≥ 0.9 on 200", ev.Accuracy, ev.Inputs)
	}
	lines := strings.Split(strings.TrimSpace(runIn(dir, bin, "predict", "--run", "run", "--input", "val.jsonl")), "\n")
	if len(lines) != 200 {
		t.Fatalf("predict: %d lines for 200 inputs", len(lines))
	}
	for _, l := range lines {
		var p struct{ Name string }
		if json.Unmarshal([]byte(l), &p); p.Name != "spam" && p.Name != "ham" {
			t.Fatalf("predict line %q: no label name", l)
		}
	}

	mod := filepath.Join(dir, "user")
	os.Mkdir(mod, 0o755)
	sum, _ := os.ReadFile("go.sum")
	os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644)
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte(fmt.Sprintf(
		"module example.com/user\n\ngo 1.26\n\nrequire github.com/tokenmix/tokenmix v0.0.0\n\nreplace github.com/tokenmix/tokenmix => %s\n", repo)), 0o644)
	os.WriteFile(filepath.Join(mod, "main.go"), []byte(userProgram), 0o644)
	got := runIn(mod, goCmd, "run", ".", filepath.Join(dir, "run"), "claim your free prize now", "notes for the team meeting")
	if got != "spam\nham\n" {
		t.Errorf("the user's program printed %q, want spam and ham", got)
	}
}

// userProgram is a separate module's main package: it loads a run and
// prints the class name of each argument.
const userProgram = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tokenmix/tokenmix"
)

func main() {
	m, err := tokenmix.Load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var seqs [][]int32
	for _, s := range os.Args[2:] {
		seqs = append(seqs, m.Encode(s))
	}
	preds, err := m.Classify(context.Background(), seqs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range preds {
		fmt.Println(p.Name)
	}
}
`
