package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

func TestMachineLine(t *testing.T) {
	l := MachineLine("", 2, 1, "avx2", "go")
	if !strings.Contains(l, "CPU model unknown, 2 threads, kernels avx2 (bf16 go)") {
		t.Errorf("%q", l)
	}
	if l := MachineLine("X", 2, 3, "go", "go"); !strings.Contains(l, "X, 3 jobs × 2 threads") {
		t.Errorf("%q", l)
	}
}

func TestGemmOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		o    GemmOptions
		want string // "" for no error
	}{
		{GemmOptions{Threads: []int{1, 2}, Trans: []string{"NN", " TT"}, Reps: 1}, ""},
		{GemmOptions{Threads: []int{1}, Reps: 0}, "--reps"},
		{GemmOptions{Reps: 1}, "thread"},
		{GemmOptions{Threads: []int{2}, Reps: 1, CPU: true}, "--threads-list 1"},
		{GemmOptions{Threads: []int{1}, Reps: 1, CPU: true, BF16: true}, "wall time only"},
		{GemmOptions{Threads: []int{1}, Trans: []string{"NX"}, Reps: 1}, `"NX"`},
	} {
		err := c.o.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// tinyGemm runs f with GemmShapes two small shapes and a short SampleTime.
func tinyGemm(t *testing.T, f func()) {
	shapes, sample := GemmShapes, SampleTime
	GemmShapes, SampleTime = []Shape{{8, 16, 4}, {5, 3, 7}}, time.Millisecond
	defer func() { GemmShapes, SampleTime = shapes, sample }()
	f()
}

// TestGemmReport checks the report's rows: one per transpose, shape and
// thread count in that order, as text and as JSON lines (two per row with
// bf16: bf16, then f32).
func TestGemmReport(t *testing.T) {
	tinyGemm(t, func() {
		o := GemmOptions{Threads: []int{1, 2}, Trans: []string{"NN", "TN"}, Reps: 1, JSON: true}
		for _, bf16 := range []bool{false, true} {
			o.BF16 = bf16
			var buf bytes.Buffer
			if err := GemmReport(context.Background(), &buf, o); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(&buf)
			for _, tr := range o.Trans {
				for _, s := range GemmShapes {
					for _, th := range o.Threads {
						ops := []string{"gemm"}
						if bf16 {
							ops = []string{"gemm_bf16", "gemm"}
						}
						for _, op := range ops {
							var r Result
							if err := dec.Decode(&r); err != nil {
								t.Fatalf("bf16 %v: %v", bf16, err)
							}
							if r.Op != op || r.M != s.M || r.N != s.N || r.K != s.K || r.Trans != tr || r.Threads != th || !(r.GFLOPS > 0) {
								t.Errorf("bf16 %v: %+v, want %s %v %s threads %d", bf16, r, op, s, tr, th)
							}
						}
					}
				}
			}
			if dec.More() {
				t.Errorf("bf16 %v: more lines than rows", bf16)
			}
		}
		o = GemmOptions{Threads: []int{1}, Trans: []string{"NT"}, Reps: 1}
		var buf bytes.Buffer
		if err := GemmReport(context.Background(), &buf, o); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.HasPrefix(out, "float32 GEMM, kernel path ") || !strings.Contains(out, "median of 1 samples, wall time\n") ||
			!strings.Contains(out, "    M     N     K trans threads   GFLOP/s of peak\n") || !strings.Contains(out, "\n    8    16     4    NT       1 ") {
			t.Errorf("text report:\n%s", out)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := GemmReport(ctx, &buf, o); err != context.Canceled {
			t.Errorf("cancelled: %v", err)
		}
	})
}

func TestPeakReport(t *testing.T) {
	var buf bytes.Buffer
	if err := PeakReport(context.Background(), &buf, GemmOptions{Threads: []int{1}, Reps: 1, JSON: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, loop := kernels.FMAPeakLoop(); loop == nil {
		if !strings.Contains(buf.String(), "no assembly FMA loop") {
			t.Errorf("no FMA loop: %q", buf.String())
		}
		return
	}
	var r Result
	if err := json.NewDecoder(&buf).Decode(&r); err != nil || r.Op != "peak" || r.Threads != 1 || !(r.GFLOPS > 0) {
		t.Errorf("%+v, %v", r, err)
	}
}

// writeConfig writes a model config to a file in a test directory.
func writeConfig(t *testing.T, cfg string) string {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	decodeLM = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 300,
	 "causal": true, "task": "lm", "mixer": {"kind": "full"}}`
	serveCls = `{"vocab_size": 260, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40,
	 "task": "classify", "n_classes": 3, "pad_id": 256, "mixer": {"kind": "full"}}`
)

// TestDecode runs the decode protocol on a random-weight lm with room for
// position 256 only: one point and the StepStreams line.
func TestDecode(t *testing.T) {
	m, err := OpenModel("", writeConfig(t, decodeLM))
	if err != nil {
		t.Fatal(err)
	}
	if err := (DecodeOptions{Reps: 300}).Check(300); err == nil {
		t.Error("no room for the reps: want error")
	}
	var buf bytes.Buffer
	if err := Decode(context.Background(), &buf, m, DecodeOptions{Reps: 3, Streams: 2, JSON: true}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	var p decodePoint
	if err := dec.Decode(&p); err != nil || p.Pos != 256 || !(p.MsPerToken > 0) || p.StateBytes <= 0 {
		t.Errorf("point %+v, %v", p, err)
	}
	var s struct {
		Streams, Pos        int
		MsPerStep           float64 `json:"ms_per_step"`
		TokensPerS          float64 `json:"tokens_per_s"`
		OneStreamMsPerToken float64 `json:"one_stream_ms_per_token"`
		Speedup             float64
	}
	if err := dec.Decode(&s); err != nil || s.Streams != 2 || s.Pos != 256 || !(s.MsPerStep > 0) || !(s.TokensPerS > 0) || !(s.OneStreamMsPerToken > 0) || !(s.Speedup > 0) {
		t.Errorf("streams %+v, %v", s, err)
	}
	if dec.More() {
		t.Error("more lines than positions and streams")
	}
	buf.Reset()
	if err := Decode(context.Background(), &buf, m, DecodeOptions{Reps: 2}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "decode: full, d=16, 1 layers, fp32, ") || !strings.HasPrefix(lines[1], "position   256: ") {
		t.Errorf("text report:\n%s", buf.String())
	}
}

// TestServe runs the load generator briefly against a classifier and an lm
// with random weights: every measurement answers requests.
func TestServe(t *testing.T) {
	var buf bytes.Buffer
	o := ServeOptions{Configs: []string{writeConfig(t, serveCls), writeConfig(t, decodeLM)}, Clients: []int{1, 2}, Streams: []int{2},
		Duration: 100 * time.Millisecond, Len: 16, MaxTokens: 4, Idle: 50 * time.Millisecond, JSON: true}
	if err := Serve(context.Background(), &buf, o); err != nil {
		t.Fatal(err)
	}
	var got []string
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var p servePoint
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Load)
		switch {
		case p.Load == "idle":
			if p.DurationSec < 0.05 {
				t.Errorf("idle %+v", p)
			}
		case p.Requests < 1 || !(p.ReqPerSec > 0) || !(p.P50Ms > 0) || p.P99Ms < p.P50Ms:
			t.Errorf("%+v", p)
		case p.Load == "completions" && (p.Clients != 2 || !(p.TokensPerS > 0)):
			t.Errorf("%+v", p)
		}
	}
	if want := "classify classify classify classify completions idle"; strings.Join(got, " ") != want {
		t.Errorf("loads %v, want %s", got, want)
	}
}
