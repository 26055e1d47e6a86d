package bench

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/plot"
)

// SoakOptions configure Soak.
type SoakOptions struct {
	Runs, Configs []string      // models to serve: run directories, then configs with random weights
	Duration      time.Duration // the mixed traffic's length
	Clients       int           // concurrent clients
	Len           int           // tokens per classify, score, tag or embeddings input
	MaxTokens     int           // tokens per completion
	Out           string        // directory for soak.csv, soak.json, the plots and server.log
	JSON          bool          // print the summary as one JSON object instead of text
}

// The soak's files in SoakOptions.Out.
const (
	SoakSeries     = "soak.csv"
	SoakSummary    = "soak.json"
	SoakPlotMemory = "soak_memory.png"
	SoakPlotCounts = "soak_counts.png"
	SoakServerLog  = "server.log"
)

const (
	soakMaxBody = 64 << 10         // the server's --max-body: an oversized request stays cheap
	soakSettle  = 30 * time.Second // how long goroutines and fds may take to come back
	soakPoll    = 250 * time.Millisecond
)

// soakWarmup is when, into the load, the reference RSS is taken: after
// the first minute, or the first 20% of a shorter soak.
func soakWarmup(d time.Duration) time.Duration { return min(time.Minute, d/5) }

// soakWindow is how long the RSS after the warm-up and at the end are
// medians over: 10% of the load (12 samples). Single samples swing by a
// few MiB with the garbage collector's cycles, which is 10% of a small
// server's RSS.
func soakWindow(d time.Duration) time.Duration { return max(soakEvery(d), d/10) }

// soakEvery is the sampling interval: 5 s, or 120 samples over a soak
// shorter than 10 minutes (at least 250 ms apart).
func soakEvery(d time.Duration) time.Duration { return max(soakPoll, min(5*time.Second, d/120)) }

// soakPrime is the traffic before the idle counts are taken.
func soakPrime(d time.Duration) time.Duration { return min(5*time.Second, d/10) }

// soakSample is one reading of the server's /metrics.
type soakSample struct {
	at         time.Time
	T          float64 // seconds since the load began (negative before)
	Phase      string  // "prime", "idle", "load" or "after"
	RSS        int64   // process_resident_memory_bytes
	Heap       int64   // go_memstats_heap_inuse_bytes
	Goroutines int     // go_goroutines
	FDs        int     // process_open_fds
}

// soakSummary is soak.json, and what the verdict is made of.
type soakSummary struct {
	CPU       string      `json:"cpu"`
	Threads   int         `json:"threads"`
	Go        string      `json:"go"`
	Models    []soakModel `json:"models"`
	DurationS float64     `json:"duration_s"`
	Clients   int         `json:"clients"`
	WarmupS   float64     `json:"warmup_s"`
	EveryS    float64     `json:"sample_every_s"`

	// RSSWarm and HeapWarm are the medians over WindowS seconds after
	// the warm-up, RSSEnd and HeapEnd over the load's last WindowS.
	WindowS  float64 `json:"window_s"`
	RSSWarm  int64   `json:"rss_after_warmup_bytes"`
	RSSEnd   int64   `json:"rss_end_bytes"`
	RSSRatio float64 `json:"rss_ratio"`
	HeapWarm int64   `json:"heap_after_warmup_bytes"`
	HeapEnd  int64   `json:"heap_end_bytes"`

	IdleGoroutines  int     `json:"idle_goroutines"`
	AfterGoroutines int     `json:"after_goroutines"`
	IdleFDs         int     `json:"idle_fds"`
	AfterFDs        int     `json:"after_fds"`
	SettleS         float64 `json:"settle_s"`

	// Requests counts the clients' requests by kind and outcome (a status
	// code, "cancelled" or "error"); Server the server's
	// tokenmix_requests_total by endpoint and code.
	Requests  map[string]map[string]int `json:"requests"`
	Server    map[string]map[string]int `json:"server"`
	Server503 int                       `json:"server_503"`
	Cancelled int                       `json:"cancelled"`
	Failures  []string                  `json:"failures,omitempty"` // the first requests not answered as designed
	Failed    int                       `json:"failed"`

	RSSOK        bool `json:"rss_ok"`
	GoroutinesOK bool `json:"goroutines_ok"`
	FDsOK        bool `json:"fds_ok"`
	StatusOK     bool `json:"status_ok"`
	Pass         bool `json:"pass"`
}

// Soak serves the models of o from `tokenmix serve` in a child process
// and runs mixed traffic against it for o.Duration from o.Clients
// clients, sampling the child's RSS, heap in use, goroutines and open
// file descriptors from its /metrics (the Prometheus Go and process
// collectors). The server runs apart so that these are the server's
// alone: in one process the clients' goroutines, connections and garbage
// would be counted with it, and those of the clients a soak drops on
// purpose would look like the server's leaks.
//
// The run: a short priming load (soakPrime; it starts the thread pool's
// workers, which stay), the clients' connections closed, the idle counts
// once goroutines and fds hold still for a second; the load; the
// connections closed again and up to soakSettle for the counts to come
// back. The verdict holds three criteria:
//   - RSS at the end of the load within 10% of RSS after soakWarmup
//     (each the median over soakWindow);
//   - goroutines and open fds after the load at most their idle counts;
//   - every request answered as designed for its kind, and no 5xx from
//     the server but the 503s of requests their clients cancelled.
//
// It writes the samples (SoakSeries), the summary (SoakSummary), two
// plots and the server's log to o.Out, reports to w, and returns an error
// naming the criteria that failed.
func Soak(ctx context.Context, w io.Writer, o SoakOptions) error {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "tokenmix-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var runs []string
	for i, r := range o.Runs {
		runs = append(runs, fmt.Sprintf("run%d=%s", i, r))
	}
	for i, c := range o.Configs {
		dir := filepath.Join(tmp, "config"+strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if err := randomModel(c, dir); err != nil {
			return err
		}
		runs = append(runs, fmt.Sprintf("config%d=%s", i, dir))
	}
	logf, err := os.Create(filepath.Join(o.Out, SoakServerLog))
	if err != nil {
		return err
	}
	defer logf.Close()
	ch, err := startSoakChild(ctx, runs, logf)
	if err != nil {
		return err
	}
	defer ch.kill()
	t, models, err := ch.target(o)
	if err != nil {
		return err
	}
	sum := soakSummary{CPU: CPUName(), Threads: parallel.Threads(), Go: runtime.Version(), Models: models,
		DurationS: o.Duration.Seconds(), Clients: o.Clients, WarmupS: soakWarmup(o.Duration).Seconds(), EveryS: soakEvery(o.Duration).Seconds()}
	rec := &soakRecord{counts: map[string]map[string]int{}}
	var series []soakSample
	var smu sync.Mutex
	sample := func(phase string) (soakSample, error) {
		s, _, err := ch.scrape()
		s.Phase = phase
		if err == nil {
			smu.Lock()
			series = append(series, s)
			smu.Unlock()
		}
		return s, err
	}
	// sampling samples every soakEvery while f runs.
	sampling := func(phase string, f func()) error {
		done, errc := make(chan struct{}), make(chan error, 1)
		go func() {
			tick := time.NewTicker(soakEvery(o.Duration))
			defer tick.Stop()
			for {
				if _, err := sample(phase); err != nil {
					errc <- err
					return
				}
				select {
				case <-tick.C:
				case <-done:
					errc <- nil
					return
				}
			}
		}()
		f()
		close(done)
		return <-errc
	}
	kinds := soakKinds(t)
	if err := sampling("prime", func() { t.load(ctx, kinds, o.Clients, soakPrime(o.Duration), rec) }); err != nil {
		return err
	}
	t.client.CloseIdleConnections()
	idle, err := settle(ctx, func() (soakSample, error) { return sample("idle") }, func(h []soakSample) bool {
		return len(h) >= 5 && allSame(h[len(h)-5:])
	})
	if err != nil {
		return err
	}
	loadStart := time.Now()
	if err := sampling("load", func() { t.load(ctx, kinds, o.Clients, o.Duration, rec) }); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, err := sample("load"); err != nil {
		return err
	}
	t.client.CloseIdleConnections()
	settleStart := time.Now()
	after, err := settle(ctx, func() (soakSample, error) { return sample("after") }, func(h []soakSample) bool {
		s := h[len(h)-1]
		return s.Goroutines <= idle.Goroutines && s.FDs <= idle.FDs
	})
	if err != nil {
		return err
	}
	sum.SettleS = time.Since(settleStart).Seconds()
	_, server, err := ch.scrape()
	if err != nil {
		return err
	}
	if err := ch.stop(); err != nil {
		return err
	}

	for i := range series {
		series[i].T = series[i].at.Sub(loadStart).Seconds()
	}
	other5xx := sum.judge(series, idle, after, rec, server)
	if err := writeSoak(o.Out, series, sum); err != nil {
		return err
	}
	if o.JSON {
		if err := json.NewEncoder(w).Encode(sum); err != nil {
			return err
		}
	} else {
		reportSoak(w, o.Out, sum, other5xx)
	}
	var failed []string
	for _, c := range []struct {
		ok   bool
		name string
	}{{sum.RSSOK, "RSS"}, {sum.GoroutinesOK, "goroutines"}, {sum.FDsOK, "open fds"}, {sum.StatusOK, "status"}} {
		if !c.ok {
			failed = append(failed, c.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("soak: FAIL: %s", strings.Join(failed, ", "))
	}
	return nil
}

// judge fills in the figures and the verdict from the samples (their T
// set), the idle counts, the counts after the load, the clients' outcomes
// and the server's requests; it returns the server's 5xx other than 503.
func (sum *soakSummary) judge(series []soakSample, idle, after soakSample, rec *soakRecord, server map[string]map[string]int) (other5xx int) {
	win := soakWindow(secs(sum.DurationS)).Seconds()
	endT := 0.0
	for _, s := range series {
		if s.Phase == "load" {
			endT = s.T
		}
	}
	sum.WindowS = win
	sum.RSSWarm, sum.HeapWarm = medianOver(series, sum.WarmupS, sum.WarmupS+win)
	sum.RSSEnd, sum.HeapEnd = medianOver(series, endT-win, endT)
	sum.RSSRatio = float64(sum.RSSEnd) / float64(sum.RSSWarm)
	sum.RSSOK = sum.RSSRatio >= 0.9 && sum.RSSRatio <= 1.1
	sum.IdleGoroutines, sum.AfterGoroutines, sum.IdleFDs, sum.AfterFDs = idle.Goroutines, after.Goroutines, idle.FDs, after.FDs
	sum.GoroutinesOK, sum.FDsOK = after.Goroutines <= idle.Goroutines, after.FDs <= idle.FDs
	sum.Requests, sum.Failures, sum.Failed, sum.Server = rec.counts, rec.failures, rec.failed, server
	for _, codes := range server {
		for code, n := range codes {
			switch {
			case code == "503":
				sum.Server503 += n
			case code >= "500":
				other5xx += n
			}
		}
	}
	for _, st := range rec.counts {
		sum.Cancelled += st["cancelled"]
	}
	sum.StatusOK = rec.failed == 0 && other5xx == 0 && sum.Server503 <= sum.Cancelled
	sum.Pass = sum.RSSOK && sum.GoroutinesOK && sum.FDsOK && sum.StatusOK
	return other5xx
}

// settle samples every soakPoll until done holds of the samples so far or
// soakSettle has passed, and returns the last sample.
func settle(ctx context.Context, sample func() (soakSample, error), done func([]soakSample) bool) (soakSample, error) {
	var h []soakSample
	for stop := time.Now().Add(soakSettle); ; {
		s, err := sample()
		if err != nil {
			return s, err
		}
		if h = append(h, s); done(h) || time.Now().After(stop) {
			return s, nil
		}
		select {
		case <-time.After(soakPoll):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// medianOver returns the median RSS and heap of the load's samples in
// [from, to] seconds.
func medianOver(series []soakSample, from, to float64) (rss, heap int64) {
	var rs, hs []float64
	for _, s := range series {
		if s.Phase == "load" && s.T >= from && s.T <= to {
			rs, hs = append(rs, float64(s.RSS)), append(hs, float64(s.Heap))
		}
	}
	if len(rs) == 0 {
		return 0, 0
	}
	return int64(stat.Median(rs)), int64(stat.Median(hs))
}

// allSame reports whether the samples have the same goroutines and fds.
func allSame(h []soakSample) bool {
	for _, s := range h {
		if s.Goroutines != h[0].Goroutines || s.FDs != h[0].FDs {
			return false
		}
	}
	return true
}

// soakRecord counts the outcomes of the soak's requests.
type soakRecord struct {
	mu       sync.Mutex
	counts   map[string]map[string]int // kind → status → requests
	failures []string                  // the first 10 not as designed
	failed   int
}

func (r *soakRecord) add(kind string, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts[kind] == nil {
		r.counts[kind] = map[string]int{}
	}
	r.counts[kind][o.status]++
	if !o.ok {
		if r.failed++; len(r.failures) < 10 {
			r.failures = append(r.failures, fmt.Sprintf("%s: %v", kind, o.err))
		}
	}
}

// load runs n clients for d, each sending requests one after another:
// client i's first of kind i (mod the kinds), so that n clients as many
// as the kinds send each, then of kinds drawn by weight. A request under
// way at d finishes.
func (t *soakTarget) load(ctx context.Context, kinds []soakKind, n int, d time.Duration, rec *soakRecord) {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			k := kinds[i%len(kinds)]
			for time.Now().Before(stop) && ctx.Err() == nil {
				rec.add(k.name, k.do(t, ctx, rng))
				r := rng.IntN(total)
				for _, k = range kinds {
					if r -= k.weight; r < 0 {
						break
					}
				}
			}
		})
	}
	wg.Wait()
}

// writeSoak writes the series as CSV, the summary as JSON and the plots.
func writeSoak(dir string, series []soakSample, sum soakSummary) error {
	f, err := os.Create(filepath.Join(dir, SoakSeries))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write([]string{"t_s", "phase", "rss_bytes", "heap_inuse_bytes", "goroutines", "open_fds"})
	for _, s := range series {
		cw.Write([]string{strconv.FormatFloat(s.T, 'f', 2, 64), s.Phase, strconv.FormatInt(s.RSS, 10),
			strconv.FormatInt(s.Heap, 10), strconv.Itoa(s.Goroutines), strconv.Itoa(s.FDs)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, SoakSummary), append(b, '\n'), 0o644); err != nil {
		return err
	}
	rss, heap := plot.Series{Name: "RSS"}, plot.Series{Name: "heap in use"}
	gs, fds := plot.Series{Name: "goroutines"}, plot.Series{Name: "open fds"}
	for _, s := range series {
		rss.X, rss.Y = append(rss.X, s.T), append(rss.Y, float64(s.RSS)/(1<<20))
		heap.X, heap.Y = append(heap.X, s.T), append(heap.Y, float64(s.Heap)/(1<<20))
		gs.X, gs.Y = append(gs.X, s.T), append(gs.Y, float64(s.Goroutines))
		fds.X, fds.Y = append(fds.X, s.T), append(fds.Y, float64(s.FDs))
	}
	title := fmt.Sprintf("tokenmix serve, %v soak, %d clients", secs(sum.DurationS), sum.Clients)
	warm := float64(sum.RSSWarm) / (1 << 20)
	if err := plot.Lines(filepath.Join(dir, SoakPlotMemory), plot.Figure{Title: title + ": memory",
		XLabel: "seconds since the load began", YLabel: "MiB",
		HLines: []plot.HLine{{Name: "RSS after warm-up +10%", Y: 1.1 * warm}, {Name: "−10%", Y: 0.9 * warm}}},
		[]plot.Series{rss, heap}); err != nil {
		return err
	}
	return plot.Lines(filepath.Join(dir, SoakPlotCounts), plot.Figure{Title: title + ": goroutines and fds",
		XLabel: "seconds since the load began", YLabel: "count",
		HLines: []plot.HLine{{Name: "idle goroutines", Y: float64(sum.IdleGoroutines)}, {Name: "idle fds", Y: float64(sum.IdleFDs)}}},
		[]plot.Series{gs, fds})
}

// reportSoak writes the figures and the verdict.
func reportSoak(w io.Writer, dir string, sum soakSummary, other5xx int) {
	var ms []string
	for _, m := range sum.Models {
		ms = append(ms, m.ID+" ("+m.Task+")")
	}
	fmt.Fprintf(w, "soak: %v of mixed traffic from %d clients against %s; %s, %d threads\n",
		secs(sum.DurationS), sum.Clients, strings.Join(ms, ", "), sum.CPU, sum.Threads)
	counts := func(title string, m map[string]map[string]int) {
		fmt.Fprintln(w, title)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			var parts []string
			for _, st := range slices.Sorted(maps.Keys(m[k])) {
				parts = append(parts, fmt.Sprintf("%s %d", st, m[k][st]))
			}
			fmt.Fprintf(w, "  %-20s %s\n", k, strings.Join(parts, ", "))
		}
	}
	counts("requests by kind and outcome:", sum.Requests)
	counts("the server's requests by endpoint and code:", sum.Server)
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(w, "RSS (medians over %.1f s): %s after the %v warm-up, %s at the end: ×%.3f (within 10%%): %s\n",
		sum.WindowS, MiB(sum.RSSWarm), secs(sum.WarmupS), MiB(sum.RSSEnd), sum.RSSRatio, verdict(sum.RSSOK))
	fmt.Fprintf(w, "goroutines: %d idle, %d after the load (%.1f s to settle): %s\n",
		sum.IdleGoroutines, sum.AfterGoroutines, sum.SettleS, verdict(sum.GoroutinesOK))
	fmt.Fprintf(w, "open fds: %d idle, %d after the load: %s\n", sum.IdleFDs, sum.AfterFDs, verdict(sum.FDsOK))
	fmt.Fprintf(w, "status: %d requests not as designed, %d 5xx but 503, %d 503s for %d requests their clients cancelled: %s\n",
		sum.Failed, other5xx, sum.Server503, sum.Cancelled, verdict(sum.StatusOK))
	for _, f := range sum.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	v := "PASS"
	if !sum.Pass {
		v = "FAIL"
	}
	fmt.Fprintf(w, "soak: %s (%s, %s, %s and %s in %s)\n", v, SoakSeries, SoakSummary, SoakPlotMemory, SoakPlotCounts, dir)
}

// secs is a number of seconds as a time.Duration, for printing.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
