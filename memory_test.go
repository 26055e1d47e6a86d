package tokenmix

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestLoadMaxMemory: under WithMaxMemory, Load refuses weights over the
// budget; calls split their inputs into passes that fit beside the
// weights, with the results of unsplit calls, and refuse an input that
// alone does not fit; a stream stops once its state passes the rest.
func TestLoadMaxMemory(t *testing.T) {
	ctx := context.Background()
	dir := tinyRun(t, clsCfg, nil)
	free, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, WithMaxMemory(free.WeightBytes()-1)); err == nil || !strings.Contains(err.Error(), "over the memory budget") {
		t.Fatalf("weights over the budget: got %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var seqs [][]int32
	for range 7 {
		s := make([]int32, 40)
		for i := range s {
			s[i] = int32(rng.IntN(256))
		}
		seqs = append(seqs, s)
	}
	want, err := free.Classify(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	// Room for passes of two sequences, not three.
	tight, err := Load(dir, WithMaxMemory(free.WeightBytes()+free.PassBytes(2, 40)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tight.Classify(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split passes: %v, want %v", got, want)
	}
	if ws := tight.WorkspaceBytes(); ws > tight.PassBytes(2, 40) || ws == 0 {
		t.Errorf("workspace %d bytes after passes of at most %d", ws, tight.PassBytes(2, 40))
	}
	small, err := Load(dir, WithMaxMemory(free.WeightBytes()+free.PassBytes(1, 20)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Classify(ctx, seqs[:1]); err == nil || !strings.Contains(err.Error(), "input 0 of 40 tokens needs a pass of") {
		t.Errorf("an input over the budget: got %v", err)
	}
	if _, err := small.Classify(ctx, [][]int32{seqs[0][:20]}); err != nil {
		t.Errorf("an input within the budget: %v", err)
	}

	// A stream stops once its state passes the budget less the weights.
	lmDir := tinyRun(t, lmCfg, nil)
	lm, err := Load(lmDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		budget int64
		ok     bool
	}{{lm.WeightBytes() + lm.StreamBytes(40), true}, {lm.WeightBytes() + lm.StreamBytes(40)/2, false}} {
		bounded, err := Load(lmDir, WithMaxMemory(c.budget))
		if err != nil {
			t.Fatal(err)
		}
		_, err = bounded.Generate(ctx, seqs[0][:30], GenerateOptions{})
		if c.ok && err != nil {
			t.Errorf("a generation within the budget: %v", err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "CacheBytes")) {
			t.Errorf("a generation past the budget: got %v", err)
		}
	}
}

// TestTrainMaxMemory: Train refuses a config over WithMaxMemory before it
// allocates, naming what fits, and leaves no run directory.
func TestTrainMaxMemory(t *testing.T) {
	out := t.TempDir() + "/run"
	cfg := TrainConfig{VocabSize: 256, DModel: 16, NHeads: 2, NLayers: 2, DFF: 32, MaxLen: 512, Task: "lm"}
	causal := true
	cfg.Causal = &causal
	cfg.Train.BatchSize, cfg.Train.Steps = 16, 2
	_, err := Train(context.Background(), cfg, TextFiles("README.md"), WithOutDir(out), WithMaxMemory(8<<20))
	if err == nil || !strings.Contains(err.Error(), "over the memory budget of 8.0 MiB") || !strings.Contains(err.Error(), "batch_size ") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load(out); err == nil {
		t.Errorf("a refused run left a run in %s", out)
	}
}
