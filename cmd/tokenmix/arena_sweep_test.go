package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIArenaSweep runs the mqar preset as a length sweep at small sizes,
// each run in a worker process: six runs, each with its length, a table
// per length, the crossover table and both plots.
func TestCLIArenaSweep(t *testing.T) {
	dir := t.TempDir()
	r := cli(t, dir, "--threads", "1", "arena", "--task", "mqar", "--len", "128,256", "--mixers", "full,aft_simple,strided",
		"--budget", "4", "--out", "out", "--json")
	if r.code != 0 {
		t.Fatalf("arena sweep: exit %d\n%s", r.code, r.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var got []string
	for dec.More() {
		var res struct {
			Mixer, Status string
			Len, Steps    int
		}
		if err := dec.Decode(&res); err != nil {
			t.Fatal(err)
		}
		if res.Status != "done" || res.Steps != 4 {
			t.Errorf("%s T=%d: %s after %d steps", res.Mixer, res.Len, res.Status, res.Steps)
		}
		got = append(got, fmt.Sprintf("%s@%d", res.Mixer, res.Len))
	}
	if want := "full@128 aft_simple@128 strided@128 full@256 aft_simple@256 strided@256"; strings.Join(got, " ") != want {
		t.Errorf("runs %v, want %s", got, want)
	}
	out := filepath.Join(dir, "out")
	for _, name := range []string{"metric_vs_len.png", "frontier_len128.png", "frontier_len256.png",
		"runs/strided.len256/result.json", "runs/full.len128/metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{"## T = 128", "## T = 256", "## Crossover", "| aft_simple |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	// A length the task cannot take is refused before anything trains.
	if r := cli(t, dir, "arena", "--task", "mqar", "--len", "64,128", "--out", "bad"); r.code == 0 || !strings.Contains(r.stderr, "task.len") {
		t.Errorf("mqar at T=64: exit %d: %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "arena", "--task", "fmnist", "--len", "784,1024", "--out", "bad"); r.code != 2 || !strings.Contains(r.stderr, "fixed length") {
		t.Errorf("fmnist sweep: exit %d: %s", r.code, r.stderr)
	}
}
