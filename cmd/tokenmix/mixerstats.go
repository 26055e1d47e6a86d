package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// mixerStats collects the mixer.Stats of every block that reports them
// (e.g. entmax's per-head α and fraction of exact zeros), keyed
// "blocks.{i}.{stat}", from the model's last forward pass. It returns nil
// when no mixer reports anything.
func mixerStats[F kernels.Float](m *model.Model[F], nLayers int) map[string]float64 {
	var out map[string]float64
	for i := 0; i < nLayers; i++ {
		s, ok := m.Mixer(i).(mixer.Stats)
		if !ok {
			continue
		}
		for k, v := range s.Stats() {
			if out == nil {
				out = map[string]float64{}
			}
			out[fmt.Sprintf("blocks.%d.%s", i, k)] = v
		}
	}
	return out
}

// withMixerStats adds the mixer statistics to a metrics record under
// "mixer" (when there are any) and returns the record.
func withMixerStats[F kernels.Float](rec map[string]any, m *model.Model[F], nLayers int) map[string]any {
	if s := mixerStats(m, nLayers); s != nil {
		rec["mixer"] = s
	}
	return rec
}

// mixerStatsLine formats the mixer statistics for the progress output, one
// block per "|": "b0 alpha 1.50 1.62 zeros 0.41 0.77 | b1 ...", or "" when
// there are none.
func mixerStatsLine[F kernels.Float](m *model.Model[F], nLayers int) string {
	var parts []string
	for i := 0; i < nLayers; i++ {
		s, ok := m.Mixer(i).(mixer.Stats)
		if !ok {
			continue
		}
		st := s.Stats()
		groups := map[string][]string{}
		var names []string
		keys := make([]string, 0, len(st))
		for k := range st {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g, _, _ := strings.Cut(k, "/")
			if _, seen := groups[g]; !seen {
				names = append(names, g)
			}
			groups[g] = append(groups[g], fmt.Sprintf("%.2f", st[k]))
		}
		b := fmt.Sprintf("b%d", i)
		for _, g := range names {
			b += " " + g + " " + strings.Join(groups[g], " ")
		}
		parts = append(parts, b)
	}
	return strings.Join(parts, " | ")
}
