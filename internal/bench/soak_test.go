package bench

import "testing"

// TestSoakJudge: each criterion of the soak's verdict fails on its own.
func TestSoakJudge(t *testing.T) {
	// A 100 s load sampled every second: warm-up 20 s, windows of 10 s.
	series := func(end int64) []soakSample {
		var ss []soakSample
		for i := range 101 {
			rss := int64(100 << 20)
			if i > 90 {
				rss = end
			}
			ss = append(ss, soakSample{T: float64(i), Phase: "load", RSS: rss, Heap: 1 << 20})
		}
		return append(ss, soakSample{T: 101, Phase: "after", RSS: 1})
	}
	idle := soakSample{Goroutines: 10, FDs: 8}
	rec := func(failed int) *soakRecord {
		r := &soakRecord{counts: map[string]map[string]int{"disconnect": {"cancelled": 5, "200": 3}}}
		r.failed = failed
		return r
	}
	for _, c := range []struct {
		name                      string
		end                       int64
		after                     soakSample
		failed                    int
		server                    map[string]map[string]int
		rss, gor, fds, status, ok bool
	}{
		{"pass", 109 << 20, idle, 0, map[string]map[string]int{"completions": {"200": 9, "503": 5}}, true, true, true, true, true},
		{"rss grows", 111 << 20, idle, 0, nil, false, true, true, true, false},
		{"rss falls", 89 << 20, idle, 0, nil, false, true, true, true, false},
		{"goroutines", 100 << 20, soakSample{Goroutines: 11, FDs: 8}, 0, nil, true, false, true, true, false},
		{"fds", 100 << 20, soakSample{Goroutines: 10, FDs: 9}, 0, nil, true, true, false, true, false},
		{"a 500", 100 << 20, idle, 0, map[string]map[string]int{"classify": {"500": 1}}, true, true, true, false, false},
		{"503s not cancelled", 100 << 20, idle, 0, map[string]map[string]int{"completions": {"503": 6}}, true, true, true, false, false},
		{"a request not as designed", 100 << 20, idle, 1, nil, true, true, true, false, false},
	} {
		sum := soakSummary{DurationS: 100, WarmupS: soakWarmup(secs(100)).Seconds()}
		sum.judge(series(c.end), idle, c.after, rec(c.failed), c.server)
		if sum.RSSOK != c.rss || sum.GoroutinesOK != c.gor || sum.FDsOK != c.fds || sum.StatusOK != c.status || sum.Pass != c.ok {
			t.Errorf("%s: rss %v goroutines %v fds %v status %v pass %v", c.name, sum.RSSOK, sum.GoroutinesOK, sum.FDsOK, sum.StatusOK, sum.Pass)
		}
		if sum.RSSWarm != 100<<20 || sum.RSSEnd != c.end || sum.WindowS != 10 {
			t.Errorf("%s: RSS %d after the warm-up, %d at the end over %v s", c.name, sum.RSSWarm, sum.RSSEnd, sum.WindowS)
		}
	}
}

func TestLabel(t *testing.T) {
	l := `code="503",endpoint="completions",model="run1"}`
	if label(l, "code") != "503" || label(l, "endpoint") != "completions" || label(l, "x") != "" {
		t.Errorf("labels of %s", l)
	}
}
