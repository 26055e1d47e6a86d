package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
)

const tinyCfg = `{"vocab_size": 64, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 32,
	"causal": true, "task": "lm", "mixer": {"kind": "full"}}`

func TestMixerAndTrain(t *testing.T) {
	cfg, err := model.ParseConfig([]byte(tinyCfg))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Mixer(cfg, 2, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mixer != "full" || r.Len != 32 || r.Batch != 2 || r.FwdMs <= 0 || r.BwdMs <= 0 || r.PlannedBytes < 4*2*32*16*4 || r.PeakRSSBytes <= 0 {
		t.Errorf("mixer result %+v", r)
	}
	tr, err := Train(cfg, 2, 16, 1, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if tr.StepMs <= 0 || tr.TokensPerS <= 0 || tr.PlannedBytes <= 0 || tr.ParamBytes <= 0 || tr.Profile != nil {
		t.Errorf("train result %+v", tr)
	}
	// Profiled: the phases' shares sum to one, and the kernels' to at
	// most one; the CPU profile written out holds the samples counted.
	out := filepath.Join(t.TempDir(), "train.pprof")
	pr, err := Train(cfg, 2, 16, 20, true, out)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := kernelShares(raw, 3); err != nil || pr.Profile == nil || n != pr.Profile.Samples {
		t.Errorf("the written profile: %d samples (%v), want the result's %+v", n, err, pr.Profile)
	}
	p := pr.Profile
	if p == nil || len(p.Phases) != 3 {
		t.Fatalf("profile %+v", p)
	}
	var phases, kernels float64
	for _, s := range p.Phases {
		phases += s.Share
		if s.Ms < 0 {
			t.Errorf("phase %+v", s)
		}
	}
	for _, s := range p.Kernels {
		kernels += s.Share
	}
	if math.Abs(phases-1) > 1e-9 || kernels > 1+1e-9 || p.Phases[0].Ms <= 0 {
		t.Errorf("profile: phases sum to %v, kernels to %v: %+v", phases, kernels, p)
	}
	// A profile file that cannot be created fails before any step; one
	// asked for without profiling is refused.
	bad := filepath.Join(t.TempDir(), "no-such-dir", "x.pprof")
	if _, err := Train(cfg, 2, 16, 1, true, bad); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("an uncreatable profile file: %v", err)
	}
	if _, err := Train(cfg, 2, 16, 1, false, out); err == nil {
		t.Error("a profile file without profiling: want error")
	}
	if _, err := Mixer(cfg, 1, 64, 1); err == nil {
		t.Error("len beyond max_len: want error")
	}
}

// TestPeakRSS checks that PeakRSS (VmHWM) rises to at least the resident
// set before an allocation plus the allocation. The allocation is sized so
// that this bound exceeds the high-water mark already reached, so a stale
// or constant PeakRSS fails.
func TestPeakRSS(t *testing.T) {
	runtime.GC()
	debug.FreeOSMemory() // nothing left for the runtime to release during the test
	hwm0, err := memstat.PeakRSS()
	if err != nil {
		t.Skip(err) // no /proc
	}
	rss0, err := statusBytes("VmRSS:")
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	size := int64(64 * mib)
	if gap := hwm0 - rss0; gap > 0 {
		size += gap
	}
	b := make([]byte, size)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1 // touch every page
	}
	hwm1, err := memstat.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	// 4 MiB of slack for pages of the binary or runtime evicted meanwhile.
	if want := rss0 + size - 4*mib; hwm1 < want || hwm1 <= hwm0 {
		t.Errorf("VmHWM %d after touching %d bytes; before: VmRSS %d, VmHWM %d; want ≥ %d and > %d", hwm1, size, rss0, hwm0, want, hwm0)
	}
	t.Logf("VmRSS %.1f MiB, VmHWM %.1f → %.1f MiB after touching %.1f MiB", float64(rss0)/mib, float64(hwm0)/mib, float64(hwm1)/mib, float64(size)/mib)
	runtime.KeepAlive(b)
}

// statusBytes returns the field of /proc/self/status that starts with key
// (a "<n> kB" line) in bytes.
func statusBytes(key string) (int64, error) {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, key)); strings.HasPrefix(line, key) && len(f) == 2 && f[1] == "kB" {
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s kB line in /proc/self/status", key)
}

// TestLayer checks that NewLayer builds a layer whose Forward and Backward
// write its output and input gradient, that it refuses T beyond max_len,
// and that MixerBenchmark reports its metrics.
func TestLayer(t *testing.T) {
	cfg, err := model.ParseConfig([]byte(tinyCfg))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.MixerConfig(0)
	if _, err := NewLayer(cfg.Kind(), c, 1, c.MaxLen+1); err == nil {
		t.Error("len beyond max_len: want error")
	}
	l, err := NewLayer(cfg.Kind(), c, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	l.Forward()
	l.Backward()
	nonzero := func(x []float32) bool {
		for _, v := range x {
			if v != 0 {
				return true
			}
		}
		return false
	}
	if len(l.out) != 2*8*16 || !nonzero(l.out) || !nonzero(l.dx) {
		t.Errorf("forward or backward wrote nothing: out %v, dx %v", l.out[:4], l.dx[:4])
	}
	if want := model.MixerBytes(l.m, 2, 8, 16, l.p.Threads); l.Bytes() != want || want <= 0 {
		t.Errorf("Bytes %d, want %d", l.Bytes(), want)
	}
	r := testing.Benchmark(func(b *testing.B) { MixerBenchmark(b, cfg.Kind(), c, 1, 8) })
	if r.N < 1 || !(r.Extra["tok/s"] > 0) || r.Extra["cpu-ns/op"] < 0 {
		t.Errorf("benchmark result %+v", r)
	}
}
