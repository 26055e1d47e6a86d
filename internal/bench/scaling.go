package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/plot"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// ScalingPoint is one (mixer, T) measurement of forward and backward of one
// mixer layer, as printed by `tokenmix bench mixer --json`.
type ScalingPoint struct {
	Mixer        string  `json:"mixer"`
	Len          int     `json:"len"`
	Batch        int     `json:"batch"`
	FwdMs        float64 `json:"fwd_ms"`
	BwdMs        float64 `json:"bwd_ms"`
	PlannedBytes int64   `json:"planned_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	Err          string  `json:"error,omitempty"`
}

// ScalingOptions configure Scaling.
type ScalingOptions struct {
	Mixers         []string // mixer kinds (default: every registered kind)
	MinLen, MaxLen int
	// MemBudget stops the sweep after the first length at which full
	// attention ("full") needs more than this many bytes (peak RSS, or the
	// planned bytes when larger); any other mixer is dropped after its own
	// first such length. 0 means no budget.
	MemBudget int64
	// TimeLimitMs drops a mixer after the first length at which its
	// forward+backward takes longer (0 = no limit).
	TimeLimitMs float64
	// Measure measures one mixer at length T.
	Measure func(ctx context.Context, mixer string, T int) (ScalingPoint, error)
	// Log receives one line per measurement (may be nil).
	Log io.Writer
}

// Scaling measures every mixer at T = MinLen, 2·MinLen, … up to MaxLen or
// until full attention exceeds the memory budget, and returns the points
// in measurement order. A failed measurement is kept with Err set and
// drops its mixer.
func Scaling(ctx context.Context, o ScalingOptions) ([]ScalingPoint, error) {
	if o.MinLen < 1 || o.MaxLen < o.MinLen || o.Measure == nil {
		return nil, fmt.Errorf("scaling: want 1 ≤ min_len ≤ max_len and a Measure function")
	}
	if len(o.Mixers) == 0 {
		for _, k := range registry.All() {
			o.Mixers = append(o.Mixers, k.Name)
		}
	}
	active := map[string]bool{}
	for _, m := range o.Mixers {
		active[m] = true
	}
	var pts []ScalingPoint
	for T := o.MinLen; T <= o.MaxLen; T *= 2 {
		stop := false
		for _, m := range o.Mixers {
			if !active[m] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return pts, err
			}
			p, err := o.Measure(ctx, m, T)
			p.Mixer, p.Len = m, T
			if err != nil {
				p.Err = err.Error()
				active[m] = false
			}
			mem := max(p.PeakRSSBytes, p.PlannedBytes)
			over := o.MemBudget > 0 && mem > o.MemBudget
			slow := o.TimeLimitMs > 0 && p.FwdMs+p.BwdMs > o.TimeLimitMs
			if over || slow {
				active[m] = false
			}
			if over && m == "full" {
				stop = true
			}
			pts = append(pts, p)
			if o.Log != nil {
				msg := ""
				switch {
				case p.Err != "":
					msg = "  error: " + p.Err
				case over:
					msg = "  over the memory budget"
				case slow:
					msg = "  over the time limit"
				}
				fmt.Fprintf(o.Log, "%-10s T=%-6d fwd %9.2f ms  bwd %9.2f ms  planned %10s  peak %10s%s\n",
					m, T, p.FwdMs, p.BwdMs, memstat.FormatBytes(p.PlannedBytes), memstat.FormatBytes(p.PeakRSSBytes), msg)
			}
		}
		if stop {
			break
		}
		if T > o.MaxLen/2 {
			break
		}
	}
	return pts, nil
}

// Scaling plot file names.
const (
	PlotScalingTime   = "scaling_time.png"
	PlotScalingMemory = "scaling_memory.png"
)

// WriteScaling writes scaling.json, scaling.csv and the two log–log plots
// (forward+backward time and peak memory against T, one line per mixer)
// into dir.
func WriteScaling(dir string, pts []ScalingPoint, title string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(pts, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "scaling.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "scaling.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"mixer", "len", "batch", "fwd_ms", "bwd_ms", "planned_bytes", "peak_rss_bytes", "error"})
	for _, p := range pts {
		w.Write([]string{p.Mixer, strconv.Itoa(p.Len), strconv.Itoa(p.Batch),
			strconv.FormatFloat(p.FwdMs, 'g', 6, 64), strconv.FormatFloat(p.BwdMs, 'g', 6, 64),
			strconv.FormatInt(p.PlannedBytes, 10), strconv.FormatInt(p.PeakRSSBytes, 10), p.Err})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var order []string
	tm, mem := map[string]*plot.Series{}, map[string]*plot.Series{}
	for _, p := range pts {
		if p.Err != "" {
			continue
		}
		if tm[p.Mixer] == nil {
			order = append(order, p.Mixer)
			tm[p.Mixer], mem[p.Mixer] = &plot.Series{Name: p.Mixer}, &plot.Series{Name: p.Mixer}
		}
		t, m := tm[p.Mixer], mem[p.Mixer]
		t.X, t.Y = append(t.X, float64(p.Len)), append(t.Y, p.FwdMs+p.BwdMs)
		m.X, m.Y = append(m.X, float64(p.Len)), append(m.Y, float64(max(p.PeakRSSBytes, p.PlannedBytes))/(1<<20))
	}
	var ts, ms []plot.Series
	for _, n := range order {
		ts, ms = append(ts, *tm[n]), append(ms, *mem[n])
	}
	if len(ts) == 0 {
		return fmt.Errorf("scaling: no successful measurement to plot")
	}
	if err := plot.Lines(filepath.Join(dir, PlotScalingTime), plot.Figure{Title: title + ": forward + backward time",
		XLabel: "sequence length T", YLabel: "ms", LogX: true, LogY: true, LegendLeft: true}, ts); err != nil {
		return err
	}
	return plot.Lines(filepath.Join(dir, PlotScalingMemory), plot.Figure{Title: title + ": peak memory",
		XLabel: "sequence length T", YLabel: "MiB (peak RSS, or planned if larger)", LogX: true, LogY: true, LegendLeft: true}, ms)
}

// SweepOptions configure ScalingSweep.
type SweepOptions struct {
	ScalingOptions        // the sweep; Measure and Log are set by ScalingSweep
	D, Heads, B, Reps int // the layer's width and heads, batch size and samples per point (for the report and MixerInChild)
	// Causal asks for causal masking; a kind without it runs
	// bidirectional, and a kind that is only causal runs causal.
	Causal bool
	// Config returns the model config (JSON) of a mixer at length T,
	// causal or not.
	Config func(mixer string, T int, causal bool) ([]byte, error)
	Out    string // directory for WriteScaling
}

// ScalingSweep is `tokenmix bench scaling`: it runs Scaling with each point
// measured by MixerInChild, one line per point to w, and writes the points
// that came back to o.Out (WriteScaling) even when the sweep stops early.
func ScalingSweep(ctx context.Context, w io.Writer, o SweepOptions) error {
	tmp, err := os.MkdirTemp("", "tokenmix-scaling")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	config := func(m string, T int) ([]byte, error) {
		k, err := registry.Lookup(m)
		if err != nil {
			return nil, err
		}
		return o.Config(m, T, o.Causal && k.Causal || !k.Bidirectional)
	}
	o.Measure, o.Log = MixerInChild(tmp, o.B, o.Reps, config), w
	fmt.Fprintf(w, "bench scaling: d=%d, %d heads, B=%d, %d thread(s), T from %d, memory budget %s\n",
		o.D, o.Heads, o.B, parallel.Threads(), o.MinLen, memstat.FormatBytes(o.MemBudget))
	pts, err := Scaling(ctx, o.ScalingOptions)
	if len(pts) > 0 {
		title := fmt.Sprintf("one mixer layer, d=%d, B=%d, %d threads", o.D, o.B, parallel.Threads())
		if werr := WriteScaling(o.Out, pts, title); werr != nil {
			return werr
		}
		fmt.Fprintf(w, "scaling.json, scaling.csv, %s and %s in %s\n", PlotScalingTime, PlotScalingMemory, o.Out)
	}
	return err
}

// MixerInChild returns a ScalingOptions.Measure that measures each point
// as `tokenmix bench mixer --json` (Mixer) in a child process of this
// binary, with this process's thread count, batch B and reps samples, so
// that the point's peak RSS is its own. config returns the model config
// (JSON) of a mixer at length T; it is written to a file in dir.
func MixerInChild(dir string, B, reps int, config func(mixer string, T int) ([]byte, error)) func(ctx context.Context, mixer string, T int) (ScalingPoint, error) {
	return func(ctx context.Context, m string, T int) (ScalingPoint, error) {
		var pt ScalingPoint
		exe, err := os.Executable()
		if err != nil {
			return pt, err
		}
		cfg, err := config(m, T)
		if err != nil {
			return pt, err
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", m, T))
		if err := os.WriteFile(path, cfg, 0o644); err != nil {
			return pt, err
		}
		cmd := exec.CommandContext(ctx, exe, "bench", "mixer", "--config", path, "--len", strconv.Itoa(T),
			"--batch", strconv.Itoa(B), "--reps", strconv.Itoa(reps), "--json")
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
}
