package arena

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
)

// TestSweepEndToEnd runs a two-length sweep of three mixers in process:
// six runs named <kind>.len<T>, each result carrying its length, a table
// per length, the crossover table, both plots; a memory budget below one
// mixer's plan skips that run with the reason; a rerun resumes.
func TestSweepEndToEnd(t *testing.T) {
	mixers := []string{"full", "aft_simple", "strided"}
	p := tinyPreset(t, mixers, "6")
	if err := p.SetLens([]int{16, 32}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(f.Results) != 6 || len(f.Lens) != 2 {
		t.Fatalf("%d results, lens %v", len(f.Results), f.Lens)
	}
	for i, r := range f.Results {
		wantLen := []int{16, 32}[i/3]
		if r.Mixer != mixers[i%3] || r.Len != wantLen || r.Status != StatusDone || r.Steps != 6 || r.TestTargets == 0 {
			t.Errorf("result %d: %s len %d status %s steps %d targets %d (%s)", i, r.Mixer, r.Len, r.Status, r.Steps, r.TestTargets, r.Note)
		}
		if _, err := os.Stat(filepath.Join(dir, "runs", runName(r.Mixer, 0, r.Len), "result.json")); err != nil {
			t.Error(err)
		}
		for _, c := range r.Curve {
			if c.TrainS <= 0 {
				t.Errorf("%s T=%d: curve point at step %d without training time", r.Mixer, r.Len, c.Step)
			}
		}
	}
	for _, name := range []string{PlotMetricVsLen, FrontierPlot(16), FrontierPlot(32), "results.md", "results.csv"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	for _, want := range []string{"## T = 16", "## T = 32", "Crossover", "| aft_simple |", "95% CI", "above chance"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	var saved File
	if err := readJSON(filepath.Join(dir, "results.json"), &saved); err != nil || len(saved.Results) != 6 || saved.Results[5].Len != 32 {
		t.Errorf("results.json: %v, %+v", err, saved.Results)
	}
	// Each result object carries "len" (the preset's lens carry it too).
	raw, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if n := strings.Count(string(raw), `"len": 32`); n != 3+1 {
		t.Errorf(`results.json: %d "len": 32, want 3 results + the preset's lens entry`, n)
	}

	// Rerun: every run resumes as finished.
	out.Reset()
	g, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range g.Results {
		if !strings.Contains(r.Note, "resumed") || r.Test != f.Results[i].Test {
			t.Errorf("rerun %s T=%d: %q, test %v then %v", r.Mixer, r.Len, r.Note, f.Results[i].Test, r.Test)
		}
	}

	// A memory budget between the smallest and the largest plan skips the
	// runs over it, each with the reason and its plan, before they start.
	var lo, hi int64 = math.MaxInt64, 0
	for _, r := range f.Results {
		lo, hi = min(lo, r.PlannedBytes), max(hi, r.PlannedBytes)
	}
	if lo >= hi {
		t.Fatalf("plans all %d bytes", lo)
	}
	out.Reset()
	h, err := Run(context.Background(), Options{Preset: p, Out: t.TempDir(), Stdout: &out, MaxMemory: hi - 1})
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, r := range h.Results {
		if r.Status == StatusSkipped {
			skipped++
			if !strings.Contains(r.Note, "over the memory budget") || r.PlannedBytes < hi {
				t.Errorf("%s T=%d skipped: %q, plan %d", r.Mixer, r.Len, r.Note, r.PlannedBytes)
			}
		} else if r.PlannedBytes > hi-1 {
			t.Errorf("%s T=%d ran with plan %d over the budget %d", r.Mixer, r.Len, r.PlannedBytes, hi-1)
		}
	}
	if skipped == 0 {
		t.Error("no run skipped under the memory budget")
	}
	if !strings.Contains(out.String(), "over the memory budget") {
		t.Errorf("the table does not say why:\n%s", out.String())
	}
}

// TestCrossover checks the crossover rule on made-up curves: a mixer that
// wins at equal training time from some length on, one that wins only
// where full attention did not run, one that never wins, one that ties.
func TestCrossover(t *testing.T) {
	curve := func(ms float64, vals ...float64) []CurvePoint {
		var c []CurvePoint
		for i, v := range vals {
			c = append(c, CurvePoint{Step: 10 * (i + 1), TrainS: ms * float64(10*(i+1)) / 1000, Val: v, HasVal: true})
		}
		return c
	}
	run := func(mixer string, t int, ms float64, vals ...float64) Result {
		c := curve(ms, vals...)
		return Result{Mixer: mixer, Len: t, Status: StatusDone, Curve: c, Steps: c[len(c)-1].Step,
			TrainSeconds: c[len(c)-1].TrainS, MsPerStep: ms, Test: vals[len(vals)-1]}
	}
	f := &File{Task: data.Info{Metric: data.Accuracy, Chance: 0.25}, Lens: []int{100, 200, 400},
		Results: []Result{
			// T=100: full is fast and good.
			run("full", 100, 10, 0.5, 0.9), run("fast", 100, 5, 0.4, 0.45), run("never", 100, 10, 0.3, 0.4),
			run("tie", 100, 10, 0.5, 0.9),
			// T=200: full is slow; at fast's 0.1 s full has only its first point.
			run("full", 200, 50, 0.5, 0.9), run("fast", 200, 5, 0.6, 0.7), run("never", 200, 50, 0.3, 0.4),
			// T=400: full did not fit.
			{Mixer: "full", Len: 400, Status: StatusSkipped}, run("fast", 400, 5, 0.5, 0.6),
			run("never", 400, 50, 0.2, 0.2),
		}}
	for _, c := range []struct {
		mixer string
		from  int
	}{{"fast", 200}, {"never", 400}} {
		from, ds := crossover(f, c.mixer)
		if from != c.from {
			t.Errorf("%s: crossover %d, want %d (%+v)", c.mixer, from, c.from, ds)
		}
	}
	// At T=200 fast trains 0.1 s; full's curve has no point by then, so it
	// stands at chance: fast's 0.7 against 0.25.
	_, ds := crossover(f, "fast")
	if d := ds[1]; !d.beats || math.Abs(d.at-0.1) > 1e-9 || d.mine != 0.7 || d.its != 0.25 {
		t.Errorf("T=200 duel %+v", d)
	}
	var md bytes.Buffer
	crossoverMarkdown(&md, f)
	for _, want := range []string{"| fast | from 200 |", "| never | from 400 |", "wins: full attention did not run",
		"| tie | never up to 400 | ties: 90.00% vs 90.00% at 0.2s | did not run |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("crossover table lacks %q:\n%s", want, md.String())
		}
	}
}

// TestCI95 checks Wilson's interval and the above-chance rule against
// hand-computed values.
func TestCI95(t *testing.T) {
	for _, c := range []struct {
		m        data.Metric
		r        Result
		lo, hi   float64
		chance   float64
		above    bool
		aboveSet bool
	}{
		// Wilson, p = 0.6, n = 100: 0.5020–0.6906.
		{data.Accuracy, Result{Status: StatusDone, Test: 0.6, TestTargets: 100}, 0.502, 0.6906, 0.5, true, true},
		{data.Accuracy, Result{Status: StatusDone, Test: 0.55, TestTargets: 100}, 0.4524, 0.6438, 0.5, false, true},
		// Bits per byte: 2 ± 1.96·0.1.
		{data.BitsPerByte, Result{Status: StatusDone, Test: 2, TestStdErr: 0.1, TestTargets: 1000}, 1.804, 2.196, 8, true, true},
		// No error recorded: unknown.
		{data.Accuracy, Result{Status: StatusDone, Test: 0.9}, 0, 0, 0.5, false, false},
	} {
		lo, hi, ok := CI95(c.m, c.r)
		if ok != c.aboveSet || ok && (math.Abs(lo-c.lo) > 1e-3 || math.Abs(hi-c.hi) > 1e-3) {
			t.Errorf("%v: CI %.4f–%.4f (%v), want %.4f–%.4f", c.r, lo, hi, ok, c.lo, c.hi)
		}
		if a, ok := AboveChance(c.m, c.chance, c.r); a != c.above || ok != c.aboveSet {
			t.Errorf("%v: above chance %v (%v), want %v", c.r, a, ok, c.above)
		}
	}
}
