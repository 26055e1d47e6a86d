package arena

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
)

// figures prints every figure of a results file that does not depend on
// time (metrics, losses, curves, steps, sizes, baselines), each float to
// the last digit, one run per line.
func figures(f *File) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var b strings.Builder
	for _, r := range f.Results {
		fmt.Fprintf(&b, "%s seed %d %s: test %s loss %s val %s steps %d params %d tokens %d planned %d curve",
			r.Mixer, r.Seed, r.Status, g(r.Test), g(r.TestLoss), g(r.Val), r.Steps, r.Params, r.TrainTokens, r.PlannedBytes)
		for _, c := range r.Curve {
			fmt.Fprintf(&b, " %d:%s/%s/%s", c.Step, g(c.TrainLoss), g(c.ValLoss), g(c.Val))
		}
		b.WriteByte('\n')
	}
	for _, bl := range f.Baselines {
		fmt.Fprintf(&b, "%s: %s %s %s\n", bl.Name, g(bl.Accuracy), g(bl.BitsPerByte), bl.Err)
	}
	return b.String()
}

// TestArenaDeterministic runs short presets twice with the same seeds and
// threads and checks that every figure agrees to the last digit: a recall
// arena with two seeds per mixer, and a Fashion-MNIST arena on a fake
// dataset with its pixel baselines. The second recall arena starts with
// one seed and is resumed with two, which must not change a figure either.
func TestArenaDeterministic(t *testing.T) {
	mixers := twoMixers(t)
	fm := t.TempDir()
	writeFakeFMNIST(t, fm, 60, 20)
	for _, c := range []struct {
		name  string
		seeds int
		setup func(p *Preset)
	}{
		{"recall", 2, func(p *Preset) {}},
		{"fmnist", 1, func(p *Preset) {
			p.SetTask("fmnist", map[string]any{"data_dir": fm, "val": 8})
			p.Mixers = mixers[:1]
		}},
	} {
		p := tinyPreset(t, mixers, "4")
		c.setup(p)
		p.Seeds = c.seeds
		var got []string
		for i := range 2 {
			dir := t.TempDir()
			if i == 1 && c.seeds > 1 {
				q := *p
				q.Seeds = 1
				if _, err := Run(context.Background(), Options{Preset: &q, Out: dir}); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Run(context.Background(), Options{Preset: p, Out: dir})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if len(f.Results) != len(p.Mixers)*c.seeds || len(f.Seeds) != c.seeds || f.Seeds[c.seeds-1] != f.Seeds[0]+uint64(c.seeds-1) ||
				f.Threads < 1 || f.Kernels == "" {
				t.Fatalf("%s: %d results, seeds %v, threads %d, kernels %q", c.name, len(f.Results), f.Seeds, f.Threads, f.Kernels)
			}
			got = append(got, figures(f))
		}
		if got[0] != got[1] {
			t.Errorf("%s: figures differ between two runs:\n%s\n%s", c.name, got[0], got[1])
		}
		lines := strings.Split(got[0], "\n")
		if c.seeds > 1 && lines[0][strings.Index(lines[0], ":"):] == lines[1][strings.Index(lines[1], ":"):] {
			t.Errorf("%s: the first two seeds gave the same figures:\n%s", c.name, got[0])
		}
		if c.name == "fmnist" && !strings.Contains(got[0], "logistic regression: ") {
			t.Errorf("fmnist: no pixel baselines in\n%s", got[0])
		}
	}
}

func TestVerdict(t *testing.T) {
	run := func(mixer string, test float64) Result {
		return Result{Mixer: mixer, Status: StatusDone, Test: test}
	}
	failed := Result{Mixer: "c", Status: StatusFailed}
	for _, c := range []struct {
		name   string
		metric data.Metric
		rs     []Result
		want   string
	}{
		{"one seed", data.Accuracy, []Result{run("a", 0.9), run("b", 0.5)}, "One seed per mixer"},
		{"nothing finished", data.Accuracy, []Result{failed}, ""},
		// a: 0.90±0.01, b: 0.50±0.01: margin 0.40 > 0.02.
		{"separated", data.Accuracy, []Result{run("a", 0.89), run("a", 0.91), run("b", 0.49), run("b", 0.51)},
			"Best mean test accuracy: a, 90.00% over 2 seeds (89.00%–91.00%); its margin over the next, b (50.00%)"},
		// a: 0.60 (0.50–0.70), b: 0.55 (0.54–0.56): margin 0.05 ≤ range 0.20.
		{"within a range", data.Accuracy, []Result{run("a", 0.5), run("a", 0.7), run("b", 0.54), run("b", 0.56)},
			"No winner: the best mean test accuracy, a's 60.00%, is within the seed ranges of b (55.00%)"},
		// A margin equal to the range is not a win either.
		{"margin = range", data.Accuracy, []Result{run("a", 0.5), run("a", 0.75), run("b", 0.25), run("b", 0.5)},
			"No winner"},
		// Lower is better: b wins.
		{"bits per byte", data.BitsPerByte, []Result{run("a", 3.0), run("a", 3.1), run("b", 2.0), run("b", 2.1)},
			"Best mean test bits per byte: b, 2.050"},
		{"one seed finished", data.Accuracy, []Result{run("a", 0.8), run("a", 0.9), run("b", 0.1), run("c", 0.2), failed},
			"Only a finished two or more seeds: nothing to compare it with. Not compared (one finished seed): b, c."},
	} {
		got := verdict(statsOf(c.rs), c.metric)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want one containing %q", c.name, got, c.want)
		}
	}
}

// TestMarkdownSeeds: with several seeds a row gives the mean and the range,
// a failed seed is noted with its seed, a note every seed shares once, and
// the verdict follows the table.
func TestMarkdownSeeds(t *testing.T) {
	r := func(seed uint64, test float64, status string) Result {
		return Result{Mixer: "full", Seed: seed, Status: status, Test: test, Steps: 10, Params: 1000, WallSeconds: 2}
	}
	f := &File{Task: data.Info{Metric: data.Accuracy}, Results: []Result{
		r(1, 0.5, StatusDone), r(2, 0.7, StatusDone), {Mixer: "full", Seed: 3, Status: StatusFailed, Note: "loss NaN"},
		{Mixer: "fnet", Seed: 1, Status: StatusDone, Test: 0.1, Steps: 10}, {Mixer: "fnet", Seed: 2, Status: StatusDone, Test: 0.1, Steps: 10},
		{Mixer: "lsh", Seed: 1, Status: StatusSkipped, Note: "no"}, {Mixer: "lsh", Seed: 2, Status: StatusSkipped, Note: "no"},
	}}
	var b bytes.Buffer
	Markdown(&b, f)
	out := b.String()
	for _, want := range []string{
		"| mixer | params | test accuracy ↑, mean | range |",
		"| full | 1.0k | 60.00% | 50.00%–70.00% |",
		"seed 3 failed: loss NaN; mean of 2 of 3 seeds |",
		"| fnet | ",
		"| lsh | | | | | | | | | | skipped: no |", // one note for both seeds
		"Best mean test accuracy: full",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if math.IsNaN(statsOf(f.Results)[0].mean) {
		t.Error("mean is NaN")
	}
}
