package arena

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/plot"
)

// Plot file names of a length sweep in the arena directory: the test
// metric against length, and per length the validation metric against
// training time (FrontierPlot).
const PlotMetricVsLen = "metric_vs_len.png"

// FrontierPlot is the file name of length t's quality–time plot.
func FrontierPlot(t int) string { return fmt.Sprintf("frontier_len%d.png", t) }

// fullKind is the baseline every mixer's crossover is measured against.
const fullKind = "full"

// atLen returns the results of length t, in order.
func atLen(rs []Result, t int) []Result {
	var out []Result
	for _, r := range rs {
		if r.Len == t {
			out = append(out, r)
		}
	}
	return out
}

// CI95 returns the 95% confidence interval of r's test metric: Wilson's
// score interval over TestTargets for accuracy, ±1.96 standard errors for
// bits per byte. ok is false when r carries no error (files written before
// it was recorded, or a run that did not finish).
func CI95(m data.Metric, r Result) (lo, hi float64, ok bool) {
	if r.Status != StatusDone || r.TestTargets == 0 || math.IsNaN(r.Test) {
		return 0, 0, false
	}
	const z = 1.959963984540054
	if m != data.Accuracy {
		return r.Test - z*r.TestStdErr, r.Test + z*r.TestStdErr, true
	}
	n, p := float64(r.TestTargets), r.Test
	c := p + z*z/(2*n)
	h := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	d := 1 + z*z/n
	return (c - h) / d, (c + h) / d, true
}

// AboveChance reports whether r's 95% interval lies beyond chance (above
// it for accuracy, below it for bits per byte); ok is false when either is
// unknown.
func AboveChance(m data.Metric, chance float64, r Result) (above, ok bool) {
	lo, hi, ok := CI95(m, r)
	if !ok || chance <= 0 {
		return false, false
	}
	if m.HigherIsBetter() {
		return lo > chance, true
	}
	return hi < chance, true
}

// aboveCell is the table's "above chance" cell for a mixer's runs at one
// length: yes, no, k/n seeds, or – when unknown.
func aboveCell(m data.Metric, chance float64, done []Result) string {
	yes, known := 0, 0
	for _, r := range done {
		if a, ok := AboveChance(m, chance, r); ok {
			known++
			if a {
				yes++
			}
		}
	}
	switch {
	case known == 0:
		return "–"
	case known == 1 && yes == 1:
		return "yes"
	case yes == 0:
		return "no"
	case yes == known:
		return "yes"
	}
	return fmt.Sprintf("%d/%d seeds", yes, known)
}

// pointTime is a curve point's training time: logged, or step × ms/step
// for files written before it was.
func pointTime(r Result, c CurvePoint) float64 {
	if c.TrainS > 0 {
		return c.TrainS
	}
	return float64(c.Step) * r.MsPerStep / 1000
}

// valAt is r's validation metric after t seconds of training: its last
// evaluation at or before t, or chance (an untrained model's level, NaN
// when unknown) when it had none by then.
func valAt(r Result, t, chance float64) float64 {
	v := math.NaN()
	if chance > 0 {
		v = chance
	}
	for _, c := range r.Curve {
		if c.HasVal && pointTime(r, c) <= t*(1+1e-9) {
			v = c.Val
		}
	}
	return v
}

// meanValAt is valAt averaged over runs (NaN values left out).
func meanValAt(rs []Result, t, chance float64) float64 {
	var s float64
	n := 0
	for _, r := range rs {
		if v := valAt(r, t, chance); !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// duel is one mixer against full attention at one length.
type duel struct {
	t         int
	beats     bool
	ran       bool    // the mixer finished a run at this length
	fullRan   bool    // full attention did
	at        float64 // the equal training time compared at (s)
	mine, its float64 // the validation metrics at that time
}

// duelAt compares mixer's finished runs with full attention's at length t
// at equal training time: the shorter of the two mean training times.
// Where full attention could not run and the mixer did, the mixer wins.
func duelAt(f *File, mixer string, t int) duel {
	m, chance := f.Task.Metric, f.Task.Chance
	var mine, full []Result
	for _, r := range atLen(f.Results, t) {
		if r.Status != StatusDone {
			continue
		}
		switch r.Mixer {
		case mixer:
			mine = append(mine, r)
		case fullKind:
			full = append(full, r)
		}
	}
	d := duel{t: t, ran: len(mine) > 0, fullRan: len(full) > 0}
	switch {
	case !d.ran:
		return d
	case !d.fullRan:
		d.beats = true
		return d
	}
	secs := func(r Result) float64 { return r.TrainSeconds }
	d.at = min(meanOf(mine, secs), meanOf(full, secs))
	d.mine, d.its = meanValAt(mine, d.at, chance), meanValAt(full, d.at, chance)
	if !math.IsNaN(d.mine) && !math.IsNaN(d.its) {
		d.beats = d.mine > d.its
		if !m.HigherIsBetter() {
			d.beats = d.mine < d.its
		}
	}
	return d
}

// crossover returns the shortest length of the sweep from which mixer
// beats full attention at equal training time at that length and every
// longer one (0: never), with the comparison at each length.
func crossover(f *File, mixer string) (int, []duel) {
	var ds []duel
	for _, t := range f.Lens {
		ds = append(ds, duelAt(f, mixer, t))
	}
	from := 0
	for i := len(ds) - 1; i >= 0 && ds[i].beats; i-- {
		from = ds[i].t
	}
	return from, ds
}

// sweepMarkdown writes a length sweep's tables: one per length, the
// baselines, the crossover table and which mixers are above chance.
func sweepMarkdown(w io.Writer, f *File) {
	m := f.Task.Metric
	name := "test " + strings.ReplaceAll(string(m), "_", " ")
	if m.HigherIsBetter() {
		name += " ↑"
	} else {
		name += " ↓"
	}
	for _, t := range f.Lens {
		fmt.Fprintf(w, "## T = %d\n\n", t)
		fmt.Fprintf(w, "| mixer | %s | 95%% CI | above chance | steps | train time | ms/step | train tok/s | planned mem | peak mem | note |\n", name)
		fmt.Fprintf(w, "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|---|\n")
		for _, s := range statsOf(atLen(f.Results, t)) {
			note := statsNote(s)
			if len(s.done) == 0 {
				planned := ""
				if s.runs[0].PlannedBytes > 0 {
					planned = memstat.FormatBytes(s.runs[0].PlannedBytes)
				}
				fmt.Fprintf(w, "| %s | | | | | | | | %s | | %s |\n", s.mixer, planned, mdEscape(note))
				continue
			}
			r := s.done[0]
			metric, ci := FormatMetric(m, s.mean), "–"
			if len(s.done) > 1 {
				metric += fmt.Sprintf(" (%s–%s)", FormatMetric(m, s.lo), FormatMetric(m, s.hi))
			} else if lo, hi, ok := CI95(m, r); ok {
				ci = FormatMetric(m, lo) + "–" + FormatMetric(m, hi)
			}
			_, peak := minMax(s.done, func(r Result) float64 { return float64(r.PeakBytes) })
			fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %.1f | %.0f | %s | %s | %s |\n",
				s.mixer, metric, ci, aboveCell(m, f.Task.Chance, s.done), r.Steps,
				formatDuration(meanOf(s.done, func(r Result) float64 { return r.TrainSeconds })),
				meanOf(s.done, func(r Result) float64 { return r.MsPerStep }),
				meanOf(s.done, func(r Result) float64 { return r.TokensPerSec }),
				memstat.FormatBytes(r.PlannedBytes), memstat.FormatBytes(int64(peak)), mdEscape(note))
		}
		fmt.Fprintln(w)
	}
	if len(f.Baselines) > 0 {
		fmt.Fprintf(w, "## Baselines\n\n| baseline | %s | note |\n|---|--:|---|\n", name)
		for _, b := range f.Baselines {
			switch {
			case b.Err != "":
				fmt.Fprintf(w, "| %s | | %s |\n", b.Name, mdEscape(b.Err))
			case b.IsClassifier():
				fmt.Fprintf(w, "| %s | %s | %s |\n", b.Name, FormatMetric(data.Accuracy, b.Accuracy), mdEscape(b.Note))
			default:
				fmt.Fprintf(w, "| %s | %.3f | compressor on the same %d test bytes |\n", b.Name, b.BitsPerByte, b.Bytes)
			}
		}
		fmt.Fprintln(w)
	}
	crossoverMarkdown(w, f)
	if f.Task.Chance > 0 {
		fmt.Fprintf(w, "\n## Above chance\n\nChance is %s (%s); a run is above it when its test set's 95%% confidence interval lies beyond it.\n\n",
			FormatMetric(m, f.Task.Chance), chanceWhat(m))
		for _, t := range f.Lens {
			var above, not []string
			for _, s := range statsOf(atLen(f.Results, t)) {
				switch aboveCell(m, f.Task.Chance, s.done) {
				case "yes":
					above = append(above, s.mixer)
				case "–":
				default:
					not = append(not, s.mixer)
				}
			}
			fmt.Fprintf(w, "- T = %d: above chance: %s; not: %s.\n", t, listOrNone(above), listOrNone(not))
		}
	}
}

// chanceWhat says what chance means for metric m.
func chanceWhat(m data.Metric) string {
	if m == data.Accuracy {
		return "the accuracy of a guess that ignores the input"
	}
	return "a uniform guess over the bytes"
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// crossoverMarkdown writes the crossover table: for each mixer, the
// shortest length from which it beats full attention at equal training
// time, and the comparison at each length.
func crossoverMarkdown(w io.Writer, f *File) {
	m := f.Task.Metric
	fmt.Fprintf(w, "## Crossover with full attention\n\n")
	hasFull := slices.ContainsFunc(f.Results, func(r Result) bool { return r.Mixer == fullKind })
	if !hasFull {
		fmt.Fprintf(w, "Full attention is not among this arena's mixers: no crossover to measure.\n")
		return
	}
	fmt.Fprintf(w, "Each mixer's validation %s against full attention's after the same training time (the shorter of the two runs'), at each length; the crossover is the shortest length from which the mixer wins at that length and every longer one. Where full attention could not run, a mixer that ran wins.\n\n",
		strings.ReplaceAll(string(m), "_", " "))
	fmt.Fprintf(w, "| mixer | crossover |")
	for _, t := range f.Lens {
		fmt.Fprintf(w, " T = %d |", t)
	}
	fmt.Fprintf(w, "\n|---|---|%s\n", strings.Repeat("---|", len(f.Lens)))
	last := f.Lens[len(f.Lens)-1]
	for _, s := range statsOf(f.Results) {
		if s.mixer == fullKind {
			continue
		}
		from, ds := crossover(f, s.mixer)
		cross := fmt.Sprintf("never up to %d", last)
		if from > 0 {
			cross = fmt.Sprintf("from %d", from)
		}
		fmt.Fprintf(w, "| %s | %s |", s.mixer, cross)
		for _, d := range ds {
			var cell string
			switch {
			case !d.ran:
				cell = "did not run"
			case !d.fullRan:
				cell = "wins: full attention did not run"
			default:
				verb := "loses"
				switch {
				case d.beats:
					verb = "wins"
				case d.mine == d.its:
					verb = "ties" // no win: a tie does not cross over
				}
				cell = fmt.Sprintf("%s: %s vs %s at %s", verb, FormatMetric(m, d.mine), FormatMetric(m, d.its), formatDuration(d.at))
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
}

// sweepPlots draws a sweep's metric against length (one line per mixer:
// the mean test metric over its finished seeds at each length) and, per
// length, the validation metric against training time (one line per
// mixer: its first finished seed's curve).
func sweepPlots(out string, f *File) error {
	m := f.Task.Metric
	scale := 1.0
	ylabel := "test bits per byte (lower is better)"
	vlabel := "validation bits per byte"
	if m == data.Accuracy {
		scale, ylabel, vlabel = 100, "test accuracy (%)", "validation accuracy (%)"
	}
	var refs []plot.HLine
	if f.Task.Chance > 0 {
		refs = append(refs, plot.HLine{Name: "chance", Y: scale * f.Task.Chance})
	}
	var lines []plot.Series
	at := map[string]int{}
	for _, t := range f.Lens {
		for _, s := range statsOf(atLen(f.Results, t)) {
			if len(s.done) == 0 {
				continue
			}
			i, ok := at[s.mixer]
			if !ok {
				i = len(lines)
				at[s.mixer] = i
				lines = append(lines, plot.Series{Name: s.mixer})
			}
			lines[i].X = append(lines[i].X, float64(t))
			lines[i].Y = append(lines[i].Y, scale*s.mean)
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("no finished runs to plot")
	}
	var errs []string
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	keep(plot.Lines(filepath.Join(out, PlotMetricVsLen), plot.Figure{
		Title: f.Task.Name + ": test metric vs sequence length", XLabel: "sequence length T", YLabel: ylabel,
		LogX: true, HLines: refs}, lines))
	for _, t := range f.Lens {
		var ss []plot.Series
		for _, s := range statsOf(atLen(f.Results, t)) {
			if len(s.done) == 0 {
				continue
			}
			r := s.done[0]
			line := plot.Series{Name: s.mixer}
			for _, c := range r.Curve {
				if c.HasVal && pointTime(r, c) > 0 {
					line.X, line.Y = append(line.X, pointTime(r, c)), append(line.Y, scale*c.Val)
				}
			}
			if len(line.X) > 0 {
				ss = append(ss, line)
			}
		}
		if len(ss) == 0 {
			continue
		}
		keep(plot.Lines(filepath.Join(out, FrontierPlot(t)), plot.Figure{
			Title:  fmt.Sprintf("%s, T = %d: validation metric vs training time", f.Task.Name, t),
			XLabel: "training time (s)", YLabel: vlabel, LogX: true, HLines: refs, LegendLeft: m.HigherIsBetter()}, ss))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
