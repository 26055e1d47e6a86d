package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/tokenmix/tokenmix/internal/memstat"
)

// memPool is the server's memory budget (Config.MaxMemory) for what
// requests use beside the weights: each model's pass workspace, which
// grows to its largest pass and stays, and the decoding states of the
// generations under way. A request reserves its planned bytes before it
// runs and waits while they do not fit.
type memPool struct {
	budget   int64
	mu       sync.Mutex
	reserved int64
	freed    chan struct{} // closed and replaced when bytes are released
}

func newMemPool(budget int64) *memPool {
	return &memPool{budget: budget, freed: make(chan struct{})}
}

// reserve takes n bytes, waiting while they do not fit; it fails when ctx
// ends first.
func (p *memPool) reserve(ctx context.Context, n int64) error {
	for {
		p.mu.Lock()
		if p.reserved+n <= p.budget {
			p.reserved += n
			p.mu.Unlock()
			return nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := ctx.Err(); err != nil { // both ready: the deadline wins
			return err
		}
	}
}

func (p *memPool) release(n int64) {
	p.mu.Lock()
	p.reserved -= n
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// memWaitError answers a request whose memory did not come free within
// its timeout: 503, to be retried.
func memWaitError(sv *served, need int64) error {
	sv.s.met.reject(sv.name, "memory")
	return &httpError{http.StatusServiceUnavailable, "unavailable_error",
		fmt.Sprintf("the request needs %s of memory and the server's budget (--max-memory %s) stayed taken by other requests: retry later",
			memstat.FormatBytes(need), memstat.FormatBytes(sv.s.mem.budget))}
}

// overBudget answers a request that cannot fit the budget even alone.
func overBudget(sv *served, need int64, what string) error {
	return badRequest("%s needs %s of memory, more than the server's budget (--max-memory %s) holds: send fewer or shorter inputs",
		what, memstat.FormatBytes(need), memstat.FormatBytes(sv.s.mem.budget))
}

// growWorkspace makes sv's workspace reservation at least need bytes:
// the model keeps one workspace, sized by its largest pass.
func (sv *served) growWorkspace(ctx context.Context, need int64) error {
	sv.wsMu.Lock()
	defer sv.wsMu.Unlock()
	if need <= sv.ws.Load() {
		return nil
	}
	if err := sv.s.mem.reserve(ctx, need-sv.ws.Load()); err != nil {
		return memWaitError(sv, need)
	}
	sv.ws.Store(need)
	return nil
}

// reservePass reserves memory for a pass over seqs (classify, score, tag,
// embed): the growth of the model's workspace to a pass over all of them.
func (sv *served) reservePass(ctx context.Context, seqs [][]int32) error {
	if sv.s.mem == nil {
		return nil
	}
	T := 0
	for _, s := range seqs {
		T = max(T, len(s))
	}
	need := sv.m.PassBytes(len(seqs), T)
	if need > sv.s.mem.budget {
		return overBudget(sv, need, fmt.Sprintf("a pass over %d inputs of up to %d tokens", len(seqs), T))
	}
	return sv.growWorkspace(ctx, need)
}

// reserveGen reserves memory for generations of prompts with opts: each
// one's decoding state at its prompt plus max_tokens, or, for a kind
// without decoding states, the workspace of a pass over that many
// tokens. It returns a release per prompt, to be called when that
// generation ends (before its last event goes out, so that a client
// that has its answer sees the memory free); whatever is still held
// when ctx ends (the request's end) is released then.
func (sv *served) reserveGen(ctx context.Context, prompts [][]int32, maxTokens []int) ([]func(), error) {
	if sv.s.mem == nil {
		return nil, nil
	}
	var states, pass int64
	each := make([]int64, len(prompts))
	for i, p := range prompts {
		n := min(len(p)+maxTokens[i], sv.cfg.MaxLen)
		if b := sv.m.StreamBytes(n); b > 0 {
			each[i] = b
			states += b
		} else {
			pass = max(pass, sv.m.PassBytes(1, n))
		}
	}
	if need := states + max(pass-sv.ws.Load(), 0); need > sv.s.mem.budget {
		return nil, overBudget(sv, states+pass, fmt.Sprintf("generating %d completion(s)", len(prompts)))
	}
	if pass > 0 {
		if err := sv.growWorkspace(ctx, pass); err != nil {
			return nil, err
		}
	}
	if states == 0 {
		return nil, nil
	}
	if err := sv.s.mem.reserve(ctx, states); err != nil {
		return nil, memWaitError(sv, states)
	}
	sv.states.Add(states)
	rels := make([]func(), len(prompts))
	for i, b := range each {
		rels[i] = sync.OnceFunc(func() {
			if b > 0 {
				sv.states.Add(-b)
				sv.s.mem.release(b)
			}
		})
	}
	context.AfterFunc(ctx, func() {
		for _, r := range rels {
			r()
		}
	})
	return rels, nil
}
