package arena

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/plot"
)

// Plot file names in the arena directory.
const (
	PlotTrainLoss = "loss_train.png"
	PlotValLoss   = "loss_val.png"
	PlotScatter   = "metric_vs_speed.png"
)

// Plots draws the training and validation loss curves (one line per mixer:
// its first finished seed) and the test metric against training throughput
// (one point per mixer: the means over its finished seeds) into out.
//
// A length sweep gets the test metric against length and, per length, the
// validation metric against training time instead (sweepPlots).
func Plots(out string, f *File) error {
	if len(f.Lens) > 0 {
		return sweepPlots(out, f)
	}
	var tr, va []plot.Series
	var pts []plot.Point
	for _, s := range statsOf(f.Results) {
		if len(s.done) == 0 {
			continue
		}
		r := s.done[0]
		t := plot.Series{Name: r.Mixer}
		v := plot.Series{Name: r.Mixer}
		for _, c := range r.Curve {
			t.X, t.Y = append(t.X, float64(c.Step)), append(t.Y, c.TrainLoss)
			if c.HasVal {
				v.X, v.Y = append(v.X, float64(c.Step)), append(v.Y, c.ValLoss)
			}
		}
		tr, va = append(tr, t), append(va, v)
		y := s.mean
		if f.Task.Metric == data.Accuracy {
			y *= 100
		}
		pts = append(pts, plot.Point{Name: r.Mixer, X: meanOf(s.done, func(r Result) float64 { return r.TokensPerSec }), Y: y})
	}
	if len(pts) == 0 {
		return fmt.Errorf("no finished runs to plot")
	}
	unit := "nats"
	if f.Task.Metric == data.BitsPerByte {
		unit = "nats per byte"
	}
	var errs []string
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	keep(plot.Lines(filepath.Join(out, PlotTrainLoss), plot.Figure{
		Title: f.Task.Name + ": training loss", XLabel: "step", YLabel: "cross-entropy (" + unit + ")"}, tr))
	keep(plot.Lines(filepath.Join(out, PlotValLoss), plot.Figure{
		Title: f.Task.Name + ": validation loss", XLabel: "step", YLabel: "cross-entropy (" + unit + ")"}, va))
	ylabel := "test accuracy (%)"
	if f.Task.Metric == data.BitsPerByte {
		ylabel = "test bits per byte (lower is better)"
	}
	var refs []plot.HLine
	for _, b := range f.Baselines {
		switch {
		case b.Err != "":
		case b.IsClassifier():
			refs = append(refs, plot.HLine{Name: b.Name, Y: 100 * b.Accuracy})
		default:
			refs = append(refs, plot.HLine{Name: b.Name, Y: b.BitsPerByte})
		}
	}
	keep(plot.Scatter(filepath.Join(out, PlotScatter), plot.Figure{
		Title: f.Task.Name + ": test metric vs training speed", XLabel: "training tokens/s", YLabel: ylabel, LogX: true,
		HLines: refs}, pts))
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
