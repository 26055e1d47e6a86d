package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/arena"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// runBenchScaling is `tokenmix bench scaling`: forward+backward time and
// peak memory of one mixer layer against T (log–log), for every mixer, from
// --min-len up to where full attention exceeds --mem-budget. Each point is
// one `tokenmix bench mixer --json` child process, so its peak RSS is its
// own.
func runBenchScaling(ctx context.Context, args []string) error {
	fs := newFlags("bench scaling")
	mixers := fs.String("mixers", "", "comma-separated mixer kinds (default: every registered kind)")
	minLen := fs.Int("min-len", 256, "first sequence length")
	maxLen := fs.Int("max-len", 65536, "last sequence length")
	memBudget := fs.String("mem-budget", "4GiB", "stop after full attention needs more than this (e.g. 512MiB, 4GiB)")
	timeLimit := fs.Duration("time-limit", 20*time.Second, "drop a mixer after its forward+backward exceeds this")
	batch := fs.Int("batch", 1, "batch size B")
	d := fs.Int("d-model", 256, "channels d")
	heads := fs.Int("heads", 4, "heads")
	causal := fs.Bool("causal", true, "causal masking (non-causal kinds then run bidirectional, noted)")
	reps := fs.Int("reps", 3, "timed samples per point (median)")
	preset := fs.String("preset", "recall", "preset whose mixer_options to use (sqrt_len resolves per T)")
	out := fs.String("out", filepath.Join("runs", "scaling"), "directory for scaling.json, scaling.csv and the PNGs")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *minLen < 1 || *maxLen < *minLen || *batch < 1 || *reps < 1 {
		return usageErr("bench scaling: want 1 ≤ --min-len ≤ --max-len, --batch ≥ 1 and --reps ≥ 1")
	}
	budget, err := parseBytes(*memBudget)
	if err != nil {
		return usageErr("bench scaling: --mem-budget: %v", err)
	}
	p, err := arena.LoadPreset(*preset)
	if errors.Is(err, arena.ErrUnknownPreset) {
		return usageErr("bench scaling: %v", err)
	} else if err != nil {
		return err
	}
	var names []string
	if *mixers != "" {
		names = strings.Split(*mixers, ",")
		if err := arena.CheckMixers(names); err != nil {
			return usageErr("bench scaling --%v", err)
		}
	} else {
		for _, k := range registry.All() {
			names = append(names, k.Name)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "tokenmix-scaling")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p.Model = arena.ModelSection{DModel: *d, NHeads: *heads, NLayers: 1, DFF: 4 * *d}
	p.Train = arena.TrainSection{}
	measure := func(ctx context.Context, m string, T int) (arena.ScalingPoint, error) {
		var pt arena.ScalingPoint
		k, err := registry.Lookup(m)
		if err != nil {
			return pt, err
		}
		c := *causal && k.Causal || !k.Bidirectional
		info := data.Info{Name: "scaling", Mode: data.LM, Vocab: 256, PadID: -1, MaxLen: T}
		cfg, err := p.ModelJSON(m, info, c, 1)
		if err != nil {
			return pt, err
		}
		path := filepath.Join(tmp, fmt.Sprintf("%s-%d.json", m, T))
		if err := os.WriteFile(path, cfg, 0o644); err != nil {
			return pt, err
		}
		cmd := exec.CommandContext(ctx, exe, "bench", "mixer", "--config", path, "--len", strconv.Itoa(T),
			"--batch", strconv.Itoa(*batch), "--reps", strconv.Itoa(*reps), "--json")
		cmd.Env = append(os.Environ(), "TOKENMIX_THREADS="+strconv.Itoa(parallel.Threads()))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return pt, fmt.Errorf("bench mixer: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
		if err := json.Unmarshal(b, &pt); err != nil {
			return pt, fmt.Errorf("bench mixer output %q: %v", b, err)
		}
		return pt, nil
	}
	fmt.Printf("bench scaling: d=%d, %d heads, B=%d, %d thread(s), T from %d, memory budget %s\n",
		*d, *heads, *batch, parallel.Threads(), *minLen, arena.FormatBytes(budget))
	pts, err := arena.Scaling(ctx, arena.ScalingOptions{Mixers: names, MinLen: *minLen, MaxLen: *maxLen,
		MemBudget: budget, TimeLimitMs: float64(timeLimit.Milliseconds()), Measure: measure, Log: os.Stdout})
	if len(pts) > 0 {
		title := fmt.Sprintf("one mixer layer, d=%d, B=%d, %d threads", *d, *batch, parallel.Threads())
		if werr := arena.WriteScaling(*out, pts, title); werr != nil {
			return werr
		}
		fmt.Printf("scaling.json, scaling.csv, %s and %s in %s\n", arena.PlotScalingTime, arena.PlotScalingMemory, *out)
	}
	return err
}

// parseBytes parses "512MiB", "4GiB", "1.5GB" or a plain byte count.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	t := strings.TrimSpace(s)
	mul := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a size such as 512MiB or 4GiB, got %q", s)
	}
	return int64(v * mul), nil
}
