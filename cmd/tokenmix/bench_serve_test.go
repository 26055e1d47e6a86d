package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
)

// TestCLIBenchServeSoak runs a 3-second soak against the test models and
// an embedder and a tagger with random weights, from as many clients as
// there are kinds of traffic: every kind is sent and answered as
// designed, goroutines and open fds come back to their idle counts, and
// the files are written. The RSS criterion is a measurement that so short
// a run does not settle: it alone may fail (exit 1), and is not checked.
func TestCLIBenchServeSoak(t *testing.T) {
	abs := func(p ...string) string {
		a, _ := filepath.Abs(filepath.Join(append([]string{"..", ".."}, p...)...))
		return a
	}
	out := t.TempDir()
	r := cli(t, "", "bench", "serve", "--soak", "3s", "--clients", "11", "--len", "16", "--max-tokens", "8", "--out", out, "--json",
		"--run", abs("testdata", "spam"), "--run", abs("testdata", "fox"),
		"--config", abs("testdata", "soak", "embed.json"), "--config", abs("testdata", "soak", "tag.json"))
	var sum struct {
		Requests     map[string]map[string]int
		Failures     []string
		RSSWarm      int64 `json:"rss_after_warmup_bytes"`
		RSSOK        bool  `json:"rss_ok"`
		GoroutinesOK bool  `json:"goroutines_ok"`
		FDsOK        bool  `json:"fds_ok"`
		StatusOK     bool  `json:"status_ok"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("exit %d, summary %q: %v\n%s", r.code, r.stdout, err, r.stderr)
	}
	if !sum.GoroutinesOK || !sum.FDsOK || !sum.StatusOK || sum.RSSWarm <= 0 {
		t.Errorf("%+v\n%s", sum, r.stderr)
	}
	if want := map[bool]int{true: 0, false: 1}[sum.RSSOK]; r.code != want {
		t.Errorf("exit %d with rss_ok %v: %s", r.code, sum.RSSOK, r.stderr)
	}
	kinds := []string{"abandoned", "chat", "classify", "completions", "completions stream", "disconnect",
		"embeddings", "malformed", "score", "slow reader", "tag"}
	for _, k := range kinds {
		if len(sum.Requests[k]) == 0 {
			t.Errorf("no %s requests: %v", k, sum.Requests)
		}
	}
	if len(sum.Requests) != len(kinds) {
		t.Errorf("kinds %v, want %v", sum.Requests, kinds)
	}
	for _, f := range []string{bench.SoakSeries, bench.SoakSummary, bench.SoakPlotMemory, bench.SoakPlotCounts, bench.SoakServerLog} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, bench.SoakSeries))
	if !strings.HasPrefix(string(b), "t_s,phase,rss_bytes,heap_inuse_bytes,goroutines,open_fds\n") ||
		!strings.Contains(string(b), ",idle,") || !strings.Contains(string(b), ",load,") || !strings.Contains(string(b), ",after,") {
		t.Errorf("%s:\n%.300s", bench.SoakSeries, b)
	}
}

// TestCLIBenchServeSoakFlags: the benchmark's flags are errors with
// --soak, --out without it, and --soak takes one client count.
func TestCLIBenchServeSoakFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--soak", "1s", "--streams", "2"},
		{"--soak", "1s", "--duration", "1s"},
		{"--soak", "1s", "--idle", "1s"},
		{"--soak", "1s", "--clients", "1,2"},
		{"--out", "x"},
		{"--soak", "-1s"},
	} {
		r := cli(t, "", append([]string{"bench", "serve", "--config", "c.json"}, args...)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, r.code, r.stderr)
		}
	}
}
