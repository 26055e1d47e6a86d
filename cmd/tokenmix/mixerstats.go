package main

import (
	"fmt"
	"sort"
	"strings"
)

// mixerStatsLine formats the mixer statistics of a model's blocks
// (Model.MixerStats, keys "blocks.{i}.{stat}") for the progress output,
// one block per "|": "b0 alpha 1.50 1.62 zeros 0.41 0.77 | b1 ...", or ""
// when there are none. A stat "alpha/h" groups under "alpha".
func mixerStatsLine(stats map[string]float64, nLayers int) string {
	var parts []string
	for i := 0; i < nLayers; i++ {
		prefix := fmt.Sprintf("blocks.%d.", i)
		var keys []string
		for k := range stats {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		sort.Strings(keys)
		groups := map[string][]string{}
		var names []string
		for _, k := range keys {
			g, _, _ := strings.Cut(strings.TrimPrefix(k, prefix), "/")
			if _, seen := groups[g]; !seen {
				names = append(names, g)
			}
			groups[g] = append(groups[g], fmt.Sprintf("%.2f", stats[k]))
		}
		b := fmt.Sprintf("b%d", i)
		for _, g := range names {
			b += " " + g + " " + strings.Join(groups[g], " ")
		}
		parts = append(parts, b)
	}
	return strings.Join(parts, " | ")
}
