package arena

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/memstat"
)

// mixerStats is one mixer's runs over its seeds.
type mixerStats struct {
	mixer string
	runs  []Result // every run of the mixer, in seed order
	done  []Result // the finished ones
	// mean, lo and hi are the mean, least and greatest test metric of the
	// finished runs (NaN when none finished).
	mean, lo, hi float64
}

// spread is the width of the seed range, hi − lo.
func (s mixerStats) spread() float64 { return s.hi - s.lo }

// statsOf groups results by mixer, in order of first appearance.
func statsOf(rs []Result) []mixerStats {
	var out []mixerStats
	at := map[string]int{}
	for _, r := range rs {
		i, ok := at[r.Mixer]
		if !ok {
			i = len(out)
			at[r.Mixer] = i
			out = append(out, mixerStats{mixer: r.Mixer})
		}
		s := &out[i]
		s.runs = append(s.runs, r)
		if r.Status == StatusDone && !math.IsNaN(r.Test) {
			s.done = append(s.done, r)
		}
	}
	for i := range out {
		s := &out[i]
		s.mean, s.lo, s.hi = math.NaN(), math.NaN(), math.NaN()
		if len(s.done) == 0 {
			continue
		}
		s.lo, s.hi = math.Inf(1), math.Inf(-1)
		var sum float64
		for _, r := range s.done {
			sum += r.Test
			s.lo, s.hi = min(s.lo, r.Test), max(s.hi, r.Test)
		}
		s.mean = sum / float64(len(s.done))
	}
	return out
}

// meanOf is the mean of f over rs.
func meanOf(rs []Result, f func(Result) float64) float64 {
	var s float64
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

// Markdown writes the results table: per mixer its params, test metric,
// train tokens/s, ms/step, steps, planned and peak memory, wall time and
// notes, then one row per baseline, then a line saying which mixer, if
// any, is best (verdict). With several seeds per mixer a row gives the mean
// over the finished seeds and a range column their least and greatest
// test metric; speed and wall time are means per run, peak memory the
// greatest.
//
// A length sweep's file gets a table per length instead, then the
// crossover table and which mixers are above chance (sweepMarkdown).
func Markdown(w io.Writer, f *File) {
	if len(f.Lens) > 0 {
		sweepMarkdown(w, f)
		return
	}
	m := f.Task.Metric
	stats := statsOf(f.Results)
	multi := false
	for _, s := range stats {
		multi = multi || len(s.runs) > 1
	}
	name := "test " + strings.ReplaceAll(string(m), "_", " ")
	if m.HigherIsBetter() {
		name += " ↑"
	} else {
		name += " ↓"
	}
	rng, rngSep, blank := "", "", ""
	if multi {
		name += ", mean"
		rng, rngSep, blank = " range |", "--:|", " |"
	}
	fmt.Fprintf(w, "| mixer | params | %s |%s train tok/s | ms/step | steps | planned mem | peak mem | wall | note |\n", name, rng)
	fmt.Fprintf(w, "|---|--:|--:|%s--:|--:|--:|--:|--:|--:|---|\n", rngSep)
	for _, s := range stats {
		note := statsNote(s)
		if len(s.done) == 0 {
			fmt.Fprintf(w, "| %s | | |%s | | | | | | %s |\n", s.mixer, blank, mdEscape(note))
			continue
		}
		r := s.done[0]
		cell := ""
		if multi {
			cell = fmt.Sprintf(" %s–%s |", FormatMetric(m, s.lo), FormatMetric(m, s.hi))
		}
		steps := fmt.Sprint(r.Steps)
		if lo, hi := minMax(s.done, func(r Result) float64 { return float64(r.Steps) }); lo != hi {
			steps = fmt.Sprintf("%.0f–%.0f", lo, hi)
		}
		_, peak := minMax(s.done, func(r Result) float64 { return float64(r.PeakBytes) })
		fmt.Fprintf(w, "| %s | %s | %s |%s %.0f | %.1f | %s | %s | %s | %s | %s |\n",
			s.mixer, formatCount(r.Params), FormatMetric(m, s.mean), cell,
			meanOf(s.done, func(r Result) float64 { return r.TokensPerSec }),
			meanOf(s.done, func(r Result) float64 { return r.MsPerStep }), steps,
			memstat.FormatBytes(r.PlannedBytes), memstat.FormatBytes(int64(peak)),
			formatDuration(meanOf(s.done, func(r Result) float64 { return r.WallSeconds })), mdEscape(note))
	}
	for _, b := range f.Baselines {
		switch {
		case b.Err != "":
			fmt.Fprintf(w, "| %s | | |%s | | | | | | %s |\n", b.Name, blank, mdEscape(b.Err))
		case b.IsClassifier():
			fmt.Fprintf(w, "| %s | | %s |%s | | | | | | %s |\n", b.Name, FormatMetric(data.Accuracy, b.Accuracy), blank, mdEscape(b.Note))
		default:
			fmt.Fprintf(w, "| %s | | %.3f |%s | | | | | | compressor on the same %d test bytes |\n", b.Name, b.BitsPerByte, blank, b.Bytes)
		}
	}
	if v := verdict(stats, m); v != "" {
		fmt.Fprintf(w, "\n%s\n", v)
	}
}

// minMax returns the least and greatest f over rs.
func minMax(rs []Result, f func(Result) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return lo, hi
}

// statsNote joins the distinct notes of a mixer's runs. A run that did not
// finish adds its status; when only some of the runs share a note, the note
// names their seeds.
func statsNote(s mixerStats) string {
	var texts []string
	seeds := map[string][]string{}
	for _, r := range s.runs {
		n := r.Note
		if r.Status != StatusDone {
			n = strings.TrimSpace(r.Status + ": " + n)
		}
		if n == "" {
			continue
		}
		if seeds[n] == nil {
			texts = append(texts, n)
		}
		seeds[n] = append(seeds[n], fmt.Sprint(r.Seed))
	}
	var notes []string
	for _, n := range texts {
		switch ss := seeds[n]; {
		case len(ss) == len(s.runs):
		case len(ss) == 1:
			n = "seed " + ss[0] + " " + n
		default:
			n = "seeds " + strings.Join(ss, ", ") + " " + n
		}
		notes = append(notes, n)
	}
	if len(s.runs) > 1 && len(s.done) > 0 && len(s.done) < len(s.runs) {
		notes = append(notes, fmt.Sprintf("mean of %d of %d seeds", len(s.done), len(s.runs)))
	}
	return strings.Join(notes, "; ")
}

// verdict names the mixer with the best mean test metric only when its
// margin over every other mixer is wider than the wider of the two seed
// ranges; otherwise it names the mixers it is not separated from. Only
// mixers with at least two finished seeds are compared, so with one seed
// per mixer it names no winner. It returns "" when no run finished.
func verdict(stats []mixerStats, m data.Metric) string {
	var cands, single []mixerStats
	for _, s := range stats {
		switch {
		case len(s.done) >= 2:
			cands = append(cands, s)
		case len(s.done) == 1:
			single = append(single, s)
		}
	}
	better := func(a, b float64) bool {
		if m.HigherIsBetter() {
			return a > b
		}
		return a < b
	}
	switch {
	case len(cands) == 0 && len(single) == 0:
		return ""
	case len(cands) == 0:
		return "One seed per mixer: no seed ranges, so no mixer is called the winner (`--seeds 3` gives ranges)."
	}
	best := 0
	for i, s := range cands {
		if better(s.mean, cands[best].mean) {
			best = i
		}
	}
	b := cands[best]
	var tied []string
	next := -1
	for i, s := range cands {
		if i == best {
			continue
		}
		if math.Abs(b.mean-s.mean) <= max(b.spread(), s.spread()) {
			tied = append(tied, fmt.Sprintf("%s (%s)", s.mixer, FormatMetric(m, s.mean)))
		} else if next < 0 || better(s.mean, cands[next].mean) {
			next = i
		}
	}
	metric := "test " + strings.ReplaceAll(string(m), "_", " ")
	var v string
	switch {
	case len(tied) > 0:
		v = fmt.Sprintf("No winner: the best mean %s, %s's %s, is within the seed ranges of %s; a margin no wider than the seed ranges is not called a win.",
			metric, b.mixer, FormatMetric(m, b.mean), strings.Join(tied, ", "))
	case next >= 0:
		v = fmt.Sprintf("Best mean %s: %s, %s over %d seeds (%s–%s); its margin over the next, %s (%s), is wider than either seed range.",
			metric, b.mixer, FormatMetric(m, b.mean), len(b.done), FormatMetric(m, b.lo), FormatMetric(m, b.hi),
			cands[next].mixer, FormatMetric(m, cands[next].mean))
	default:
		v = fmt.Sprintf("Only %s finished two or more seeds: nothing to compare it with.", b.mixer)
	}
	if len(single) > 0 {
		var names []string
		for _, s := range single {
			names = append(names, s.mixer)
		}
		v += fmt.Sprintf(" Not compared (one finished seed): %s.", strings.Join(names, ", "))
	}
	return v
}
