package bench

import (
	"bytes"
	"runtime/pprof"
	"testing"
	"time"
)

//go:noinline
func spinForProfile(d time.Duration) (x float64) {
	for t0 := time.Now(); time.Since(t0) < d; {
		for i := 0; i < 1e5; i++ {
			x += float64(i) * 1e-9
		}
	}
	return x
}

// TestKernelShares: a CPU profile of a busy loop decodes into samples
// whose top kernel is that loop, and shortName drops module paths and
// type parameters.
func TestKernelShares(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("no CPU profile: %v", err)
	}
	spinForProfile(500 * time.Millisecond)
	pprof.StopCPUProfile()
	ks, n, err := kernelShares(buf.Bytes(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 || len(ks) == 0 || ks[0].Name != "bench.spinForProfile" || ks[0].Share < 0.5 {
		t.Errorf("%d samples, kernels %+v", n, ks)
	}
	for in, want := range map[string]string{
		"github.com/x/y/internal/kernels.Gemm[go.shape.float32]":                    "kernels.Gemm",
		"github.com/x/y/internal/model.(*Model[go.shape.float32]).Backward":         "model.(*Model).Backward",
		"github.com/x/y/internal/mixer/attn.transposeHeads[go.shape.float32].func1": "attn.transposeHeads.func1",
		"runtime.memmove": "runtime.memmove",
	} {
		if got := shortName(in); got != want {
			t.Errorf("shortName(%q) = %q, want %q", in, got, want)
		}
	}
	if _, _, err := kernelShares([]byte("not gzip"), 3); err == nil {
		t.Error("a broken profile: want an error")
	}
}
