package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokenmix/tokenmix"
)

// served is one model being served: its admission slots, its batcher's
// queue and, for a causal lm, its generation scheduler's queue.
type served struct {
	s    *Server
	name string
	m    *tokenmix.Model
	cfg  tokenmix.Config
	// slots holds one token per admitted request (waiting or running).
	slots chan struct{}
	// batching counts the classify or score requests admitted and not yet
	// answered: the batcher waits for more only while some are on their
	// way to it.
	batching atomic.Int32
	jobs     chan *batchJob
	gens     chan *genJob
	quit     chan struct{}
	// Memory (memory.go): ws is the workspace reservation, grown under
	// wsMu; states the decoding states reserved; stateBytes the states
	// the scheduler holds, after its last step.
	wsMu       sync.Mutex
	ws         atomic.Int64
	states     atomic.Int64
	stateBytes atomic.Int64
}

func newServed(s *Server, name string, m *tokenmix.Model) *served {
	return &served{s: s, name: name, m: m, cfg: m.Config(),
		slots: make(chan struct{}, s.cfg.Queue),
		jobs:  make(chan *batchJob, s.cfg.Queue),
		gens:  make(chan *genJob, s.cfg.Queue),
		quit:  make(chan struct{})}
}

// start starts the model's batcher and, for a causal lm, its scheduler.
func (sv *served) start() {
	sv.s.workers.Add(1)
	go sv.batcher()
	if sv.generates() {
		sv.s.workers.Add(1)
		go sv.scheduler()
	}
}

func (sv *served) generates() bool { return sv.cfg.Task == "lm" && sv.cfg.Causal }

// tagResult is one input's answer of /v1/tag.
type tagResult struct {
	Spans []tokenmix.Span `json:"spans"`
}

func (sv *served) kindName() string {
	switch sv.cfg.Task {
	case "tag":
		return "tagger"
	case "embed":
		return "embedder"
	}
	if sv.cfg.Task == "lm" {
		if sv.cfg.Causal {
			return "causal lm"
		}
		return "bidirectional lm"
	}
	return "classifier"
}

// maxInput is the most tokens one input may have, and its description for
// errors.
func (sv *served) maxInput(capTokens int) (int, string) {
	if capTokens > 0 && capTokens < sv.cfg.MaxLen {
		return capTokens, fmt.Sprintf("the cap of %d tokens per input (--max-input-tokens)", capTokens)
	}
	return sv.cfg.MaxLen, fmt.Sprintf("model %q's max_len %d", sv.name, sv.cfg.MaxLen)
}

// admit takes one of the model's slots, or answers 429 when all are taken.
func (sv *served) admit() (release func(), err error) {
	select {
	case sv.slots <- struct{}{}:
		return func() { <-sv.slots }, nil
	default:
		sv.s.met.reject(sv.name, "queue_full")
		return nil, &httpError{http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("model %q has %d requests waiting or running, its most (--queue): retry later", sv.name, cap(sv.slots))}
	}
}

// batchJob is one classify or score request waiting for its batch.
type batchJob struct {
	ctx  context.Context
	seqs [][]int32
	done chan batchResult // cap 1
}

// maxLen is the length of j's longest sequence.
func (j *batchJob) maxLen() int {
	T := 0
	for _, s := range j.seqs {
		T = max(T, len(s))
	}
	return T
}

type batchResult struct {
	results []any // tokenmix.Prediction, tokenmix.Score, tagResult or an embedding ([]float32), one per input
	err     error
}

// batch submits seqs to the model's batcher and waits for their results.
func (sv *served) batch(ctx context.Context, seqs [][]int32) ([]any, error) {
	if err := sv.reservePass(ctx, seqs); err != nil {
		return nil, err
	}
	sv.batching.Add(1)
	defer sv.batching.Add(-1)
	j := &batchJob{ctx: ctx, seqs: seqs, done: make(chan batchResult, 1)}
	select { // cannot block long: the slots bound the queue
	case sv.jobs <- j:
	case <-ctx.Done():
		return nil, ctxError(ctx)
	}
	select {
	case r := <-j.done:
		return r.results, r.err
	case <-ctx.Done():
		return nil, ctxError(ctx)
	}
}

// ctxError answers a request whose context ended: the timeout, or the
// client gone (the answer is then never read).
func ctxError(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return &httpError{http.StatusGatewayTimeout, "timeout_error", "the request took longer than its timeout (--timeout)"}
	}
	return &httpError{http.StatusServiceUnavailable, "unavailable_error", "the request was cancelled"}
}

var errTimeout = errors.New("request timeout")

// contextWithTimeout is the request's context with the server's timeout,
// whose cause tells a timeout from a client gone.
func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(r.Context(), d, errTimeout)
}

// batcher gathers concurrent classify or score requests: the first opens
// a window of BatchWindow, and the batch runs when it closes, when it
// holds MaxBatch sequences, or as soon as no other admitted request is on
// its way (a lone request does not wait), as one call of the API.
func (sv *served) batcher() {
	defer sv.s.workers.Done()
	cfg := sv.s.cfg
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var carry *batchJob // a job that did not fit the last batch
	for {
		var batch []*batchJob
		n, T := 0, 0
		if carry != nil {
			batch, n, T, carry = []*batchJob{carry}, len(carry.seqs), carry.maxLen(), nil
		} else {
			select {
			case j := <-sv.jobs:
				batch, n, T = []*batchJob{j}, len(j.seqs), j.maxLen()
			case <-sv.quit:
				return
			}
		}
		timer.Reset(cfg.BatchWindow)
	gather:
		for n < cfg.MaxBatch && int(sv.batching.Load()) > len(batch) {
			select {
			case j := <-sv.jobs:
				// A batch stays within MaxBatch and, under a memory
				// budget, within the workspace reserved.
				t := max(T, j.maxLen())
				if n+len(j.seqs) > cfg.MaxBatch || (sv.s.mem != nil && sv.m.PassBytes(n+len(j.seqs), t) > sv.ws.Load()) {
					carry = j
					break gather
				}
				batch, n, T = append(batch, j), n+len(j.seqs), t
			case <-timer.C:
				break gather
			case <-sv.quit:
				timer.Stop()
				for _, j := range batch {
					j.done <- batchResult{err: &httpError{http.StatusServiceUnavailable, "unavailable_error", "the server is shutting down"}}
				}
				return
			}
		}
		timer.Stop()
		sv.run(batch)
	}
}

// run runs one batch: the sequences of the jobs still waiting, in one call.
func (sv *served) run(batch []*batchJob) {
	var live []*batchJob
	var seqs [][]int32
	for _, j := range batch {
		if j.ctx.Err() == nil {
			live, seqs = append(live, j), append(seqs, j.seqs...)
		}
	}
	if len(live) == 0 {
		return
	}
	sv.s.met.batchSize.WithLabelValues(sv.name).Observe(float64(len(seqs)))
	var results []any
	var err error
	switch sv.cfg.Task {
	case "classify":
		var preds []tokenmix.Prediction
		preds, err = sv.m.Classify(sv.s.base, seqs)
		for _, p := range preds {
			results = append(results, p)
		}
	case "embed":
		var embs [][]float32
		embs, err = sv.m.Embed(sv.s.base, seqs)
		for _, e := range embs {
			results = append(results, e)
		}
	case "tag":
		var spans [][]tokenmix.Span
		spans, err = sv.m.TagTokens(sv.s.base, seqs)
		for _, sp := range spans {
			results = append(results, tagResult{Spans: sp})
		}
	default:
		var scores []tokenmix.Score
		scores, err = sv.m.Score(sv.s.base, seqs)
		for _, s := range scores {
			results = append(results, s)
		}
	}
	off := 0
	for _, j := range live {
		n := len(j.seqs)
		if err != nil {
			j.done <- batchResult{err: err}
		} else {
			j.done <- batchResult{results: results[off : off+n]}
		}
		off += n
	}
}
