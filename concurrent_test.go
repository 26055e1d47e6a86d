package tokenmix_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix"
)

// concurrentSeqs returns n byte sequences of 8 to 64 tokens from a fixed
// seed.
func concurrentSeqs(seed uint64, n int) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	seqs := make([][]int32, n)
	for i := range seqs {
		seqs[i] = make([]int32, 8+rng.IntN(57))
		for t := range seqs[i] {
			seqs[i][t] = int32(rng.IntN(256))
		}
	}
	return seqs
}

// loadPair loads the example classifier twice, each with its own thread
// count.
func loadPair(tb testing.TB, threads int) [2]*tokenmix.Model {
	var ms [2]*tokenmix.Model
	for i := range ms {
		m, err := tokenmix.Load("testdata/spam", tokenmix.WithThreads(threads))
		if err != nil {
			tb.Fatal(err)
		}
		ms[i] = m
	}
	return ms
}

// TestConcurrentModels: two models with one thread each classify at once
// from two goroutines, and every result is bitwise the one each model
// gives alone.
func TestConcurrentModels(t *testing.T) {
	ms := loadPair(t, 1)
	ctx := context.Background()
	var seqs [2][][]int32
	var alone [2][]tokenmix.Prediction
	for i, m := range ms {
		seqs[i] = concurrentSeqs(uint64(i+1), 40)
		p, err := m.Classify(ctx, seqs[i])
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = p
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				got, err := m.Classify(ctx, seqs[i])
				if err != nil {
					errs <- err
					return
				}
				for j := range got {
					if got[j].Label != alone[i][j].Label || !slices.Equal(got[j].Probs, alone[i][j].Probs) {
						t.Errorf("model %d, sequence %d: concurrent %v, alone %v", i, j, got[j].Probs, alone[i][j].Probs)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// BenchmarkConcurrentModels reports the throughput of two one-thread
// models classifying at once from two goroutines over the same calls made
// one after the other ("x_concurrent", the 1.7× on two cores).
func BenchmarkConcurrentModels(b *testing.B) {
	ms := loadPair(b, 1)
	ctx := context.Background()
	seqs := [2][][]int32{concurrentSeqs(1, 200), concurrentSeqs(2, 200)}
	run := func(i int) {
		if _, err := ms[i].Classify(ctx, seqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	run(0) // the first call of each model sizes its workspace
	run(1)
	var seq, conc time.Duration
	for b.Loop() {
		start := time.Now()
		run(0)
		run(1)
		seq += time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for i := range ms {
			wg.Add(1)
			go func() { defer wg.Done(); run(i) }()
		}
		wg.Wait()
		conc += time.Since(start)
	}
	b.ReportMetric(seq.Seconds()/conc.Seconds(), "x_concurrent")
}

// TestThreadsBitwise: a model loaded WithThreads(1), (2) or (3) gives
// bitwise the logits and generations of the same model on the default
// thread count, in fp32 and bf16.
func TestThreadsBitwise(t *testing.T) {
	ctx := context.Background()
	seqs := concurrentSeqs(7, 12)
	for _, dir := range []string{"testdata/spam", "testdata/fox"} {
		for _, prec := range []string{"fp32", "bf16"} {
			var want *tokenmix.Logits
			var wantGen *tokenmix.Result
			for _, th := range []int{0, 1, 2, 3} {
				opts := []tokenmix.Option{tokenmix.WithPrecision(prec)}
				if th > 0 {
					opts = append(opts, tokenmix.WithThreads(th))
				}
				m, err := tokenmix.Load(dir, opts...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(ctx, seqs)
				if err != nil {
					t.Fatal(err)
				}
				var gen *tokenmix.Result
				if m.Config().Task == "lm" {
					gen, err = m.Generate(ctx, seqs[0], tokenmix.GenerateOptions{MaxTokens: 24, Temperature: 0.8, Seed: 5})
					if err != nil {
						t.Fatal(err)
					}
				}
				if th == 0 {
					want, wantGen = got, gen
					continue
				}
				for i := range got.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%s %s, %d threads: logit %d = %v, default threads %v", dir, prec, th, i, got.Data[i], want.Data[i])
					}
				}
				if gen != nil && (!slices.Equal(gen.Tokens, wantGen.Tokens) || !slices.Equal(gen.LogProbs, wantGen.LogProbs)) {
					t.Errorf("%s %s, %d threads: generated %v %v, default threads %v %v", dir, prec, th, gen.Tokens, gen.LogProbs, wantGen.Tokens, wantGen.LogProbs)
				}
			}
		}
	}
}
