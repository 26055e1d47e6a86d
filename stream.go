package tokenmix

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
)

// StreamOptions configure a Stream.
type StreamOptions struct {
	// MaxTokens bounds the stream's length, prompt included (0: max_len).
	MaxTokens int
	// CacheBytes bounds the memory of the stream's decoding state (0: the
	// memory budget less the weights under WithMaxMemory, else no bound);
	// an Append that takes the state past it returns an error and
	// the stream refuses further tokens.
	CacheBytes int64
}

// Stream is one sequence being decoded by a causal lm: each Append feeds
// the next tokens and returns the logits of the last one. A model whose
// mixer kind decodes incrementally (mixer.Kind.Decode: every built-in causal
// kind) keeps a state per stream (a key–value cache, per-bucket caches,
// running sums), so a token costs what the mixer's recurrence allows, and
// the logits are those a forward pass over MaxTokens positions gives there
// (the same as over the prefix, but for LSH, whose buckets follow the
// length). A model without such a state (a kind added without Decode, or a
// causal lm with pad_id) runs the whole prefix on every Append. A Stream is
// not safe for concurrent use; many streams may share one Model.
type Stream struct {
	m          *Model
	dec        *model.Decoding[float32]
	tokens     []int32
	max        int
	cacheBytes int64
	err        error // sticky: the stream is unusable
	logits     []float32
}

// NewStream starts a stream. It needs a causal lm (task "lm", causal true).
func (m *Model) NewStream(o StreamOptions) (*Stream, error) {
	c := m.cfg
	if c.Task != "lm" || !c.Causal {
		return nil, fmt.Errorf("tokenmix: streams need a causal lm (task \"lm\", causal true), this model's task is %q, causal %v", c.Task, c.Causal)
	}
	if o.MaxTokens < 0 || o.MaxTokens > c.MaxLen {
		return nil, fmt.Errorf("tokenmix: StreamOptions.MaxTokens %d outside [0, max_len=%d]", o.MaxTokens, c.MaxLen)
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = c.MaxLen
	}
	if o.CacheBytes < 0 {
		return nil, fmt.Errorf("tokenmix: StreamOptions.CacheBytes %d is negative", o.CacheBytes)
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = m.passBudget() // WithMaxMemory's, less the weights (0: none)
	}
	s := &Stream{m: m, max: o.MaxTokens, cacheBytes: o.CacheBytes}
	if m.net.CanDecode() == nil {
		var err error
		if s.dec, err = m.net.NewDecoding(o.MaxTokens); err != nil {
			return nil, fmt.Errorf("tokenmix: %w", err)
		}
	}
	return s, nil
}

// checkCache makes the stream unusable, with an error, once its state is
// past CacheBytes.
func (s *Stream) checkCache() error {
	if s.cacheBytes > 0 && s.dec.Bytes() > s.cacheBytes {
		s.err = fmt.Errorf("tokenmix: the stream's state holds %d bytes, more than its CacheBytes %d (StreamOptions, or WithMaxMemory less the weights)", s.dec.Bytes(), s.cacheBytes)
		return s.err
	}
	return nil
}

// Len is the number of tokens the stream holds.
func (s *Stream) Len() int { return len(s.tokens) }

// CacheBytes is the memory of the stream's decoding state.
func (s *Stream) CacheBytes() int64 {
	if s.dec == nil {
		return 0
	}
	return s.dec.Bytes()
}

// Append feeds tokens (a prompt, or the next token) and returns the logits
// of the last one, [vocab_size] in fresh memory. It returns an error for no
// tokens, a token outside the vocabulary, a stream longer than its
// MaxTokens, a state past CacheBytes (the stream then refuses more), or a
// ctx cancelled before the call runs.
func (s *Stream) Append(ctx context.Context, tokens ...int32) ([]float32, error) {
	if s.err != nil {
		return nil, s.err
	}
	c := s.m.cfg
	switch {
	case len(tokens) == 0:
		return nil, fmt.Errorf("tokenmix: Append with no tokens")
	case len(s.tokens)+len(tokens) > s.max:
		return nil, fmt.Errorf("tokenmix: the stream would hold %d tokens, more than its %d", len(s.tokens)+len(tokens), s.max)
	}
	for i, v := range tokens {
		if v < 0 || int(v) >= c.VocabSize {
			return nil, fmt.Errorf("tokenmix: token %d at position %d outside the vocabulary [0, %d)", v, len(s.tokens)+i, c.VocabSize)
		}
	}
	release, err := s.m.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	V := c.VocabSize
	if s.dec != nil {
		s.logits = slices.Grow(s.logits[:0], len(tokens)*V)[:len(tokens)*V]
		if err := s.m.net.Decode(s.dec, tokens, s.logits); err != nil {
			if s.dec.Broken() {
				s.err = fmt.Errorf("tokenmix: %w", err)
			}
			return nil, fmt.Errorf("tokenmix: %w", err)
		}
		s.tokens = append(s.tokens, tokens...)
		if err := s.checkCache(); err != nil {
			return nil, err
		}
		last := slices.Clone(s.logits[(len(tokens)-1)*V:])
		if len(tokens) > 1 {
			s.logits = nil // a prompt's logits are not kept for the stream's life
		}
		return last, nil
	}
	// No incremental state: run the whole prefix.
	all := append(slices.Clone(s.tokens), tokens...)
	if pb := s.m.passBudget(); pb > 0 && s.m.PassBytes(1, len(all)) > pb {
		return nil, fmt.Errorf("tokenmix: a pass over the stream's %d tokens needs %s, more than the %s the memory budget leaves beside the weights (WithMaxMemory)",
			len(all), memstat.FormatBytes(s.m.PassBytes(1, len(all))), memstat.FormatBytes(pb))
	}
	net := s.m.net
	net.Cancel = ctx.Err
	defer func() { net.Cancel = nil }()
	if _, err := net.Forward(all, nil, 1, len(all)); err != nil {
		return nil, err
	}
	s.tokens = all
	return slices.Clone(net.Logits()[(len(all)-1)*V:]), nil
}

// GenerateOptions configure Generate.
type GenerateOptions struct {
	// MaxTokens is the most tokens to generate (0: until max_len).
	MaxTokens int
	// Temperature 0 picks the most probable token (greedy); otherwise
	// tokens are drawn from softmax(logits/Temperature), restricted to the
	// TopK most probable (0: all) and to the smallest set of most probable
	// tokens whose probability reaches TopP (0 or 1: all).
	Temperature, TopP float64
	TopK              int
	// Seed seeds the draws: the same seed, binary and kernel path give the
	// same tokens, on any thread count.
	Seed uint64
	// Stop ends generation when the output ends with one of these token
	// sequences, which is not included in it.
	Stop [][]int32
	// OnToken, when set, receives each output token as soon as it is
	// known not to begin a stop sequence; an error it returns ends
	// Generate with that error.
	OnToken func(Token) error
}

// Token is one generated token and its log-probability under the model
// (before temperature, top-k and top-p), with the token the model found
// most probable at that step and its log-probability.
type Token struct {
	ID         int32   `json:"id"`
	LogProb    float32 `json:"log_prob"`
	TopID      int32   `json:"top_id"`
	TopLogProb float32 `json:"top_log_prob"`
}

// Result is what Generate produced. FinishReason is "stop" (a stop
// sequence), "length" (MaxTokens) or "max_len" (the model's max_len).
type Result struct {
	Tokens       []int32   `json:"tokens"`
	LogProbs     []float32 `json:"log_probs"`
	FinishReason string    `json:"finish_reason"`
}

// Generate continues prompt with a causal lm. It returns an error for an
// empty or invalid prompt (as Stream.Append), invalid options, or a
// cancelled ctx.
func (m *Model) Generate(ctx context.Context, prompt []int32, o GenerateOptions) (*Result, error) {
	g, err := m.StartGeneration(ctx, prompt, o)
	if err != nil {
		return nil, err
	}
	gs := []*Generation{g}
	for !g.Done() {
		if err := m.StepGenerations(ctx, gs); err != nil {
			return nil, err
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	return &g.res, nil
}

// Generation is one Generate taken a token at a time, so that a caller
// (a server) can step many of them together: StartGeneration feeds the
// prompt, and each StepGenerations draws every unfinished generation's
// next token and feeds it to its stream, all streams in one pass over the
// weights. A generation draws the same tokens, from the same logits, as
// Generate with the same prompt and options. A Generation is not safe
// for concurrent use.
type Generation struct {
	s       *Stream
	o       GenerateOptions
	rng     *rand.Rand
	res     Result
	emitted int
	logits  []float32
	err     error
	// The most probable token at each step, and its log-probability.
	top   []int32
	topLP []float32
}

// StartGeneration checks prompt and o as Generate does, starts a stream and
// feeds it the prompt; the first token is drawn by the first
// StepGenerations.
func (m *Model) StartGeneration(ctx context.Context, prompt []int32, o GenerateOptions) (*Generation, error) {
	switch {
	case len(prompt) == 0:
		return nil, fmt.Errorf("tokenmix: Generate needs a prompt of at least one token")
	case o.MaxTokens < 0 || o.TopK < 0:
		return nil, fmt.Errorf("tokenmix: GenerateOptions: MaxTokens %d and TopK %d must be ≥ 0", o.MaxTokens, o.TopK)
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || o.TopP < 0 || o.TopP > 1 || math.IsNaN(o.TopP):
		return nil, fmt.Errorf("tokenmix: GenerateOptions: Temperature %v must be ≥ 0 and TopP %v in [0, 1]", o.Temperature, o.TopP)
	case len(prompt) >= m.cfg.MaxLen:
		return nil, fmt.Errorf("tokenmix: a prompt of %d tokens leaves no room below max_len %d", len(prompt), m.cfg.MaxLen)
	}
	for i, s := range o.Stop {
		if len(s) == 0 {
			return nil, fmt.Errorf("tokenmix: GenerateOptions.Stop[%d] is empty", i)
		}
	}
	s, err := m.NewStream(StreamOptions{})
	if err != nil {
		return nil, err
	}
	logits, err := s.Append(ctx, prompt...)
	if err != nil {
		return nil, err
	}
	return &Generation{s: s, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x67656e)), logits: logits}, nil
}

// Done reports whether the generation has finished: Result holds its
// tokens and finish reason, or Err its OnToken's error.
func (g *Generation) Done() bool { return g.res.FinishReason != "" || g.err != nil }

// Result returns the tokens drawn so far; once Done, the whole result.
// The Result is the generation's own: it changes with later steps.
func (g *Generation) Result() *Result { return &g.res }

// CacheBytes is the memory of the generation's decoding state
// (Stream.CacheBytes).
func (g *Generation) CacheBytes() int64 { return g.s.CacheBytes() }

// Err is the error that ended the generation (its OnToken's), or nil.
func (g *Generation) Err() error { return g.err }

// StepGenerations advances every unfinished generation of gens by one
// token: each draws its next token (passing it to OnToken once it cannot
// begin a stop sequence, and finishing on a stop sequence, MaxTokens or
// max_len), and those that go on feed it to their streams through one
// StepStreams. An OnToken error ends that generation only (see Err). The
// error returned is StepStreams' (a cancelled ctx); the generations are
// then unusable.
func (m *Model) StepGenerations(ctx context.Context, gens []*Generation) error {
	var streams []*Stream
	var next []int32
	var fed []*Generation
	for _, g := range gens {
		if g.s.m != m {
			return fmt.Errorf("tokenmix: StepGenerations: a generation of another model")
		}
		if g.Done() {
			continue
		}
		if id, ok := g.draw(); ok {
			streams, next, fed = append(streams, g.s), append(next, id), append(fed, g)
		}
	}
	if len(fed) == 0 {
		return nil
	}
	logits, err := m.StepStreams(ctx, streams, next)
	if err != nil {
		return err
	}
	for i, g := range fed {
		g.logits = logits[i]
	}
	return nil
}

// draw draws the next token from the generation's logits and reports
// whether the generation goes on with it.
func (g *Generation) draw() (int32, bool) {
	o, res := &g.o, &g.res
	id, lp, top, topLP := sample(g.logits, *o, g.rng)
	res.Tokens, res.LogProbs = append(res.Tokens, id), append(res.LogProbs, lp)
	g.top, g.topLP = append(g.top, top), append(g.topLP, topLP)
	if n := stopAt(res.Tokens, o.Stop); n >= 0 {
		res.Tokens, res.LogProbs, res.FinishReason = res.Tokens[:n], res.LogProbs[:n], "stop"
		g.emit(len(res.Tokens))
		return 0, false
	}
	// Hold back a tail that may still become a stop sequence.
	if !g.emit(len(res.Tokens) - pendingStop(res.Tokens, o.Stop)) {
		return 0, false
	}
	switch {
	case o.MaxTokens > 0 && len(res.Tokens) == o.MaxTokens:
		res.FinishReason = "length"
	case g.s.Len()+1 == g.s.m.cfg.MaxLen: // prompt and output fill max_len
		res.FinishReason = "max_len"
	}
	if res.FinishReason != "" {
		g.emit(len(res.Tokens))
		return 0, false
	}
	return id, true
}

// emit passes the tokens before upto not yet passed to OnToken, and
// reports false when OnToken fails (the generation then ends with its
// error).
func (g *Generation) emit(upto int) bool {
	for ; g.emitted < upto && g.err == nil; g.emitted++ {
		if g.o.OnToken != nil {
			i := g.emitted
			g.err = g.o.OnToken(Token{g.res.Tokens[i], g.res.LogProbs[i], g.top[i], g.topLP[i]})
		}
	}
	return g.err == nil
}

// stopAt returns the length of out without the longest stop sequence it
// ends with, or −1.
func stopAt(out []int32, stops [][]int32) int {
	n := -1
	for _, st := range stops {
		if len(out) >= len(st) && slices.Equal(out[len(out)-len(st):], st) && (n < 0 || len(out)-len(st) < n) {
			n = len(out) - len(st)
		}
	}
	return n
}

// pendingStop returns the length of the longest tail of out that is a
// proper prefix of a stop sequence.
func pendingStop(out []int32, stops [][]int32) int {
	best := 0
	for _, st := range stops {
		for n := min(len(st)-1, len(out)); n > best; n-- {
			if slices.Equal(out[len(out)-n:], st[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// sample draws the next token from logits as o says, and returns it and
// the most probable token, each with its log-probability under
// softmax(logits).
func sample(logits []float32, o GenerateOptions, rng *rand.Rand) (id int32, lp float32, top int32, topLP float32) {
	mx, logZ := data.LogNorm(logits)
	logProb := func(i int) float32 { return float32(float64(logits[i]-mx) - logZ) }
	if o.Temperature == 0 {
		best := data.Argmax(logits)
		return int32(best), logProb(best), int32(best), logProb(best)
	}
	type cand struct {
		i int
		p float64
	}
	cs := make([]cand, len(logits))
	var sum float64
	for i, v := range logits {
		cs[i] = cand{i, math.Exp(float64(v-mx) / o.Temperature)}
		sum += cs[i].p
	}
	if (o.TopK > 0 && o.TopK < len(cs)) || (o.TopP > 0 && o.TopP < 1) {
		// Truncation keeps the most probable: sort them first, ties in
		// index order. Without it, the draw walks the tokens in index
		// order, O(V).
		slices.SortFunc(cs, func(a, b cand) int {
			switch {
			case a.p > b.p:
				return -1
			case a.p < b.p:
				return 1
			}
			return a.i - b.i
		})
	}
	best := 0
	for k, c := range cs {
		if c.p > cs[best].p || c.p == cs[best].p && c.i < cs[best].i {
			best = k
		}
	}
	top, topLP = int32(cs[best].i), logProb(cs[best].i)
	for i := range cs {
		cs[i].p /= sum
	}
	keep := len(cs)
	if o.TopK > 0 {
		keep = min(keep, o.TopK)
	}
	if o.TopP > 0 && o.TopP < 1 {
		var cum float64
		for i := range keep {
			cum += cs[i].p
			if cum >= o.TopP {
				keep = i + 1
				break
			}
		}
	}
	cs = cs[:keep]
	var mass float64
	for _, c := range cs {
		mass += c.p
	}
	u := rng.Float64() * mass
	for _, c := range cs {
		if u -= c.p; u < 0 {
			return int32(c.i), logProb(c.i), top, topLP
		}
	}
	last := cs[len(cs)-1].i
	return int32(last), logProb(last), top, topLP
}

// StepStreams appends next[i] to streams[i] for every i and returns each
// stream's new logits, as Append would one by one (within 1e-6). When the
// model decodes incrementally, the step is one pass over the weights for
// all the streams (model.DecodeBatch); otherwise the streams run one after
// another. Errors (a stream twice, of another model, full, past its
// CacheBytes, a token outside the vocabulary) are found before any stream
// changes, except a CacheBytes excess, found after the step.
func (m *Model) StepStreams(ctx context.Context, streams []*Stream, next []int32) ([][]float32, error) {
	if len(streams) != len(next) {
		return nil, fmt.Errorf("tokenmix: StepStreams: %d streams and %d tokens", len(streams), len(next))
	}
	seen := map[*Stream]bool{}
	incremental := true
	for i, s := range streams {
		switch {
		case s.m != m:
			return nil, fmt.Errorf("tokenmix: StepStreams: stream %d belongs to another model", i)
		case seen[s]:
			return nil, fmt.Errorf("tokenmix: StepStreams: stream %d appears twice", i)
		case s.err != nil:
			return nil, fmt.Errorf("tokenmix: stream %d: %w", i, s.err)
		case len(s.tokens)+1 > s.max:
			return nil, fmt.Errorf("tokenmix: stream %d holds %d tokens, its most", i, len(s.tokens))
		case next[i] < 0 || int(next[i]) >= m.cfg.VocabSize:
			return nil, fmt.Errorf("tokenmix: stream %d: token %d outside the vocabulary [0, %d)", i, next[i], m.cfg.VocabSize)
		}
		seen[s] = true
		incremental = incremental && s.dec != nil
	}
	out := make([][]float32, len(streams))
	if !incremental {
		for i, s := range streams {
			var err error
			if out[i], err = s.Append(ctx, next[i]); err != nil {
				return nil, fmt.Errorf("tokenmix: stream %d: %w", i, err)
			}
		}
		return out, nil
	}
	release, err := m.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ds := make([]*model.Decoding[float32], len(streams))
	for i, s := range streams {
		ds[i] = s.dec
	}
	V := m.cfg.VocabSize
	logits := make([]float32, len(streams)*V)
	if err := m.net.DecodeBatch(ds, next, logits); err != nil {
		return nil, fmt.Errorf("tokenmix: %w", err)
	}
	var first error
	for i, s := range streams {
		s.tokens = append(s.tokens, next[i])
		out[i] = logits[i*V : (i+1)*V : (i+1)*V]
		if err := s.checkCache(); err != nil && first == nil {
			first = fmt.Errorf("stream %d: %w", i, err)
		}
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}
