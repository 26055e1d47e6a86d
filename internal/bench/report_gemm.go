package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// GemmOptions configure GemmReport and PeakReport.
type GemmOptions struct {
	Threads []int    // thread counts
	Trans   []string // transposes, each "NN", "NT", "TN" or "TT" (GemmReport)
	Reps    int      // timed samples per measurement
	CPU     bool     // one thread timed by its CPU time (Threads must be [1])
	BF16    bool     // GemmReport: the bf16 GEMM, each shape against f32 in the same run
	JSON    bool     // one JSON Result per line instead of the text table
}

// Check returns an error for options GemmReport and PeakReport cannot run:
// reps < 1, no or non-positive thread counts, a thread count other than 1
// with CPU, CPU with BF16, or an unknown transpose.
func (o GemmOptions) Check() error {
	if o.Reps < 1 {
		return errors.New("--reps must be positive")
	}
	if len(o.Threads) == 0 {
		return errors.New("no thread counts")
	}
	for _, t := range o.Threads {
		if t < 1 {
			return fmt.Errorf("thread count %d < 1", t)
		}
		if o.CPU && t != 1 {
			return errors.New("--clock cpu measures one thread: use --threads-list 1")
		}
	}
	if o.CPU && o.BF16 {
		return errors.New("--dtype bf16 measures wall time only")
	}
	for _, tr := range o.Trans {
		if _, _, err := parseTrans(strings.TrimSpace(tr)); err != nil {
			return err
		}
	}
	return nil
}

// GemmReport measures the GEMM on every shape of GemmShapes, transpose and
// thread count of o (transposes outermost, threads innermost) and writes
// each result to w as it comes: a JSON line, or a table row with the
// fraction of the FMA peak measured first. With o.BF16 each row is the
// bf16 GEMM (GemmBF16) and, in the same run, the f32 GEMM on the same shape
// and threads.
func GemmReport(ctx context.Context, w io.Writer, o GemmOptions) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.BF16 {
		return gemmBF16Report(ctx, w, o)
	}
	peaks := map[int]float64{}
	if !o.JSON {
		fmt.Fprintf(w, "float32 GEMM, kernel path %v, median of %d samples, %s time\n", kernels.CurrentPath(), o.Reps, clockName(o.CPU))
		for _, t := range o.Threads {
			if g, isa, ok := peak(o.CPU, t, o.Reps); ok {
				peaks[t] = g
				fmt.Fprintf(w, "measured %s FMA peak, %d thread(s): %.1f GFLOP/s\n", isa, t, g)
			}
		}
		fmt.Fprintf(w, "\n%5s %5s %5s %5s %7s %9s %7s\n", "M", "N", "K", "trans", "threads", "GFLOP/s", "of peak")
	}
	enc := json.NewEncoder(w)
	for _, tr := range o.Trans {
		for _, s := range GemmShapes {
			for _, t := range o.Threads {
				if err := ctx.Err(); err != nil {
					return err
				}
				var r Result
				var err error
				if o.CPU {
					r, err = GemmCPU(s, strings.TrimSpace(tr), o.Reps)
				} else {
					r, err = Gemm(s, strings.TrimSpace(tr), t, o.Reps)
				}
				if err != nil {
					return err
				}
				if o.JSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
					continue
				}
				frac := "-"
				if p := peaks[t]; p > 0 {
					frac = fmt.Sprintf("%.0f%%", 100*r.GFLOPS/p)
				}
				fmt.Fprintf(w, "%5d %5d %5d %5s %7d %9.1f %7s\n", s.M, s.N, s.K, r.Trans, t, r.GFLOPS, frac)
			}
		}
	}
	return nil
}

// gemmBF16Report is GemmReport with o.BF16.
func gemmBF16Report(ctx context.Context, w io.Writer, o GemmOptions) error {
	enc := json.NewEncoder(w)
	if !o.JSON {
		fmt.Fprintf(w, "bf16 GEMM (packed operands), bf16 path %s, against the f32 GEMM (path %v), median of %d samples\n", kernels.BF16Path(), kernels.CurrentPath(), o.Reps)
		for _, t := range o.Threads {
			if g, ok := PeakBF16(t, o.Reps); ok {
				fmt.Fprintf(w, "measured bf16 dot-product peak, %d thread(s): %.1f GFLOP/s\n", t, g)
			}
		}
		fmt.Fprintf(w, "\n%5s %5s %5s %5s %7s %10s %9s %8s\n", "M", "N", "K", "trans", "threads", "bf16 GF/s", "f32 GF/s", "bf16÷f32")
	}
	for _, tr := range o.Trans {
		tr = strings.TrimSpace(tr)
		for _, s := range GemmShapes {
			for _, t := range o.Threads {
				if err := ctx.Err(); err != nil {
					return err
				}
				rb, err := GemmBF16(s, tr, t, o.Reps)
				if err != nil {
					return err
				}
				rf, err := Gemm(s, tr, t, o.Reps)
				if err != nil {
					return err
				}
				if o.JSON {
					if err := enc.Encode(rb); err != nil {
						return err
					}
					if err := enc.Encode(rf); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(w, "%5d %5d %5d %5s %7d %10.1f %9.1f %7.2f×\n", s.M, s.N, s.K, tr, t, rb.GFLOPS, rf.GFLOPS, rb.GFLOPS/rf.GFLOPS)
			}
		}
	}
	return nil
}

// PeakReport measures the FMA peak (Peak, or PeakCPU with o.CPU) per
// thread count of o, then the bf16 dot-product peak where the CPU has one
// (wall time only), and writes each to w: a JSON Result line or a text
// line. Without an assembly FMA loop it writes one line saying so.
func PeakReport(ctx context.Context, w io.Writer, o GemmOptions) error {
	o.Trans, o.BF16 = nil, false
	if err := o.Check(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, t := range o.Threads {
		if err := ctx.Err(); err != nil {
			return err
		}
		g, isa, ok := peak(o.CPU, t, o.Reps)
		if !ok {
			fmt.Fprintln(w, "bench peak: no assembly FMA loop for this CPU (needs amd64 with AVX2+FMA or AVX-512); kernels run the pure-Go path")
			return nil
		}
		if o.JSON {
			r := Result{Op: "peak", ISA: isa, Threads: t, GFLOPS: g}
			if o.CPU {
				r.Clock = "thread-cpu"
			}
			if err := enc.Encode(r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "%s FMA peak, %d thread(s): %.1f GFLOP/s\n", isa, t, g)
	}
	for _, t := range o.Threads {
		if o.CPU {
			break
		}
		g, ok := PeakBF16(t, o.Reps)
		if !ok {
			break
		}
		if o.JSON {
			if err := enc.Encode(Result{Op: "peak_bf16", ISA: "avx512bf16", Threads: t, GFLOPS: g}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "avx512bf16 dot-product peak, %d thread(s): %.1f GFLOP/s\n", t, g)
	}
	return nil
}

// peak is Peak, or PeakCPU when cpu (threads is then 1).
func peak(cpu bool, threads, reps int) (float64, string, bool) {
	if cpu {
		return PeakCPU(reps)
	}
	return Peak(threads, reps)
}

func clockName(cpu bool) string {
	if cpu {
		return "cpu"
	}
	return "wall"
}
