package tokenmix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
)

// benchCfg is a classifier of about 13M parameters (52 MB of weights), so
// a copy of the weights per goroutine would show in the peak RSS.
const benchCfg = `{"vocab_size": 260, "d_model": 512, "n_heads": 8, "n_layers": 4, "d_ff": 2048, "max_len": 128, "pad_id": 256,
 "task": "classify", "n_classes": 4, "mixer": {"kind": "full"}, "train": {}}`

// BenchmarkClassify measures Classify on one Model from 1, 4 and 16
// goroutines, each call 8 sequences of 64–128 tokens: sequences/s and the
// peak RSS (VmHWM) of a process that did only this. Each measurement runs
// in a fresh child process (the benchmark binary itself, through
// TestClassifyChild) so that its peak RSS is its own.
func BenchmarkClassify(b *testing.B) {
	dir := tokenmix.TinyRun(b, benchCfg, nil)
	for _, g := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestClassifyChild$", "-test.bench=^$", "-test.v")
			cmd.Env = append(os.Environ(), "TOKENMIX_CLASSIFY_CHILD="+fmt.Sprintf("%s,%d,%d", dir, g, b.N))
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("child: %v\n%s", err, out)
			}
			var r struct {
				Seconds float64
				Seqs    int
				PeakRSS int64
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "{") {
					json.Unmarshal([]byte(line), &r)
				}
			}
			b.ReportMetric(float64(r.Seqs)/r.Seconds, "seqs/s")
			b.ReportMetric(float64(r.PeakRSS)/(1<<20), "peak-RSS-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestClassifyChild is BenchmarkClassify's child: with
// TOKENMIX_CLASSIFY_CHILD=dir,goroutines,calls it loads the model in dir
// and runs that many Classify calls spread over the goroutines, then prints
// the time, the sequences classified and the peak RSS as JSON. Without the
// variable it does nothing.
func TestClassifyChild(t *testing.T) {
	env := os.Getenv("TOKENMIX_CLASSIFY_CHILD")
	if env == "" {
		return
	}
	f := strings.Split(env, ",")
	g, _ := strconv.Atoi(f[1])
	calls, _ := strconv.Atoi(f[2])
	m, err := tokenmix.Load(f[0])
	if err != nil {
		t.Fatal(err)
	}
	seqs := tokenmix.RandomSeqs(8, 64, 256, 1)
	for i, s := range seqs { // 65 to 128 tokens
		seqs[i] = append(make([]int32, 64), s...)
	}
	if _, err := m.Classify(context.Background(), seqs); err != nil { // warm-up: slabs sized
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := w; c < calls; c += g {
				if _, err := m.Classify(context.Background(), seqs); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	rss, _ := memstat.PeakRSS() // 0 where /proc is unavailable
	r, _ := json.Marshal(map[string]any{"seconds": time.Since(start).Seconds(), "seqs": calls * len(seqs), "peakrss": rss})
	fmt.Println(string(r))
}

// BenchmarkPrecision compares Classify in fp32 and in bf16 (WithPrecision)
// on benchCfg's classifier, each call 8 sequences of 128 tokens, in one
// run: bf16 on each assembly bf16 path of this CPU (bf16/avx2fma,
// bf16/avx512fma, bf16/avx512bf16, bf16/amx), the one in use last.
func BenchmarkPrecision(b *testing.B) { benchPrecision(b, benchCfg, 128) }

// BenchmarkPrecisionD256T512 is BenchmarkPrecision on a 4-layer d=256
// classifier (scripts/serve_cls_d256.json's, max_len 512) with 8
// sequences of 512 tokens.
func BenchmarkPrecisionD256T512(b *testing.B) {
	benchPrecision(b, `{"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 4, "d_ff": 1024, "max_len": 512,
 "task": "classify", "n_classes": 2, "pool": "mean", "mixer": {"kind": "full"}, "train": {}}`, 512)
}

func benchPrecision(b *testing.B, cfg string, T int) {
	dir := tokenmix.TinyRun(b, cfg, nil)
	seqs := tokenmix.RandomSeqs(8, T, 256, 1)
	for i, s := range seqs {
		seqs[i] = append(make([]int32, T-len(s)), s...)
	}
	runs := []string{"fp32"}
	for _, bp := range kernels.BF16Paths()[1:] {
		runs = append(runs, "bf16/"+bp)
	}
	if len(runs) == 1 {
		runs = append(runs, "bf16/go")
	}
	for _, r := range runs {
		p, bp, _ := strings.Cut(r, "/")
		if bp != "" {
			old, err := kernels.SetBF16Path(bp)
			if err != nil {
				b.Fatal(err)
			}
			defer kernels.SetBF16Path(old)
		}
		b.Run(r, func(b *testing.B) {
			m, err := tokenmix.Load(dir, tokenmix.WithPrecision(p))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := m.Classify(ctx, seqs); err != nil { // warm-up: slabs sized
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := m.Classify(ctx, seqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(seqs)*b.N)/b.Elapsed().Seconds(), "seqs/s")
		})
	}
}
