package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/tokenmix/tokenmix"
)

// completionRequest is the body of POST /v1/completions: the subset of
// the OpenAI completions API that tokenmix serves.
type completionRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	Stop        json.RawMessage `json:"stop"`
	Seed        *uint64         `json:"seed"`
	Stream      bool            `json:"stream"`
	Logprobs    *int            `json:"logprobs"`
}

// defaultMaxTokens is max_tokens when a request leaves it out (as the
// OpenAI API).
const defaultMaxTokens = 16

// completion is a response body (or, streamed, one event's).
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

type choice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// logprobs holds the token ids, their log-probabilities and, with
// logprobs 1, each step's most probable token (its id as the key).
type logprobs struct {
	Tokens        []int32              `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// stringOrList reads a field that is a string or an array of strings.
func stringOrList(raw json.RawMessage, field string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, badRequest("field %q: a string or an array of strings", field)
	}
	return list, nil
}

// genJob is one prompt of a completions request, for the scheduler.
type genJob struct {
	ctx    context.Context
	index  int
	prompt []int32
	opts   tokenmix.GenerateOptions
	events chan<- genEvent // room for every event the job sends
	g      *tokenmix.Generation
	// release frees the job's memory reservation, if any (memory.go).
	release func()
}

// genEvent is a generated token, or the end of a job (res or err).
type genEvent struct {
	index int
	tok   tokenmix.Token
	done  bool
	res   *tokenmix.Result
	err   error
}

// finish releases the job's memory and sends its last event.
func (j *genJob) finish(res *tokenmix.Result, err error) {
	if j.release != nil {
		j.release()
	}
	j.events <- genEvent{index: j.index, done: true, res: res, err: err}
}

// scheduler steps the model's generations: it starts new ones (feeding
// their prompts) as room allows, drops those whose request has gone, and
// steps all the others together.
func (sv *served) scheduler() {
	defer sv.s.workers.Done()
	max := sv.s.cfg.MaxStreams
	var active []*genJob
	defer func() {
		for _, j := range active {
			j.finish(nil, &httpError{http.StatusServiceUnavailable, "unavailable_error", "the server is shutting down"})
		}
	}()
	for {
		if len(active) == 0 {
			select {
			case j := <-sv.gens:
				active = sv.startGen(active, j)
			case <-sv.quit:
				return
			}
		}
	more:
		for len(active) < max {
			select {
			case j := <-sv.gens:
				active = sv.startGen(active, j)
			default:
				break more
			}
		}
		live := active[:0]
		for _, j := range active {
			if j.ctx.Err() != nil {
				j.finish(nil, ctxError(j.ctx))
				continue
			}
			live = append(live, j)
		}
		active = live
		if len(active) == 0 {
			sv.stateBytes.Store(0)
			continue
		}
		if sv.s.stepHook != nil {
			sv.s.stepHook()
		}
		gs := make([]*tokenmix.Generation, len(active))
		for i, j := range active {
			gs[i] = j.g
		}
		if err := sv.m.StepGenerations(sv.s.base, gs); err != nil {
			for _, j := range active {
				j.finish(nil, fmt.Errorf("generation stopped: %w", err))
			}
			active = nil
			continue
		}
		var held int64
		for _, j := range active {
			held += j.g.CacheBytes()
		}
		sv.stateBytes.Store(held)
		live = active[:0]
		for _, j := range active {
			if j.g.Done() {
				j.finish(j.g.Result(), j.g.Err())
				continue
			}
			live = append(live, j)
		}
		active = live
		select {
		case <-sv.quit:
			return
		default:
		}
	}
}

// startGen feeds j's prompt and adds it to active, or ends it with the
// error.
func (sv *served) startGen(active []*genJob, j *genJob) []*genJob {
	if j.ctx.Err() != nil {
		j.finish(nil, ctxError(j.ctx))
		return active
	}
	g, err := sv.m.StartGeneration(j.ctx, j.prompt, j.opts)
	if err != nil {
		if j.ctx.Err() != nil {
			err = ctxError(j.ctx)
		}
		j.finish(nil, err)
		return active
	}
	j.g = g
	return append(active, j)
}

// completions serves POST /v1/completions.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := decode(r, s.cfg.MaxBodyBytes, &req); err != nil {
		fail(w, err)
		return
	}
	sv, err := s.model(r, req.Model)
	if err != nil {
		fail(w, err)
		return
	}
	jobsOpts, prompts, err := s.checkCompletion(sv, &req)
	if err != nil {
		fail(w, err)
		return
	}
	ctx, done, err := s.admitted(r, sv)
	if err != nil {
		fail(w, err)
		return
	}
	defer done()

	events, err := s.startJobs(ctx, sv, prompts, jobsOpts)
	if err != nil {
		fail(w, err)
		return
	}
	head := completion{ID: "cmpl-" + info(r).id, Object: "text_completion", Created: time.Now().Unix(), Model: sv.name}
	promptTokens := 0
	for _, p := range prompts {
		promptTokens += len(p)
	}
	if req.Stream {
		s.stream(w, ctx, head, events, len(prompts), req.Logprobs, sv.m)
		return
	}
	outs, err := collect(ctx, events, len(prompts))
	if err != nil {
		fail(w, err)
		return
	}
	resp := head
	completionTokens := 0
	for i, o := range outs {
		completionTokens += len(o.ids)
		c := choice{Index: i, Text: sv.m.Text(o.ids), FinishReason: &outs[i].finish}
		if req.Logprobs != nil {
			c.Logprobs = o.logprobs(*req.Logprobs)
		}
		resp.Choices = append(resp.Choices, c)
	}
	resp.Usage = &usage{promptTokens, completionTokens, promptTokens + completionTokens}
	writeJSON(w, http.StatusOK, resp)
}

// startJobs queues a generation job per prompt on sv's scheduler and
// returns the channel of their events, which has room for all of them.
func (s *Server) startJobs(ctx context.Context, sv *served, prompts [][]int32, opts []tokenmix.GenerateOptions) (<-chan genEvent, error) {
	room := 0
	maxTokens := make([]int, len(opts))
	for i, o := range opts {
		room += o.MaxTokens + 1
		maxTokens[i] = o.MaxTokens
	}
	rels, err := sv.reserveGen(ctx, prompts, maxTokens)
	if err != nil {
		return nil, err
	}
	events := make(chan genEvent, room)
	for i, p := range prompts {
		o := opts[i]
		idx := i
		o.OnToken = func(tk tokenmix.Token) error {
			events <- genEvent{index: idx, tok: tk}
			s.met.tokens.WithLabelValues(sv.name).Inc()
			return nil
		}
		j := &genJob{ctx: ctx, index: i, prompt: p, opts: o, events: events}
		if rels != nil {
			j.release = rels[i]
		}
		select { // cannot block long: the slots bound the queue
		case sv.gens <- j:
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
	return events, nil
}

// collect gathers the tokens and finish reasons of n jobs' events.
func collect(ctx context.Context, events <-chan genEvent, n int) ([]choiceState, error) {
	outs := make([]choiceState, n)
	for left := n; left > 0; {
		select {
		case e := <-events:
			if e.done {
				if e.err != nil {
					return nil, e.err
				}
				outs[e.index].finish = finishReason(e.res.FinishReason)
				left--
				continue
			}
			outs[e.index].add(e.tok)
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
	return outs, nil
}

// stream writes a completion as server-sent events: one per token, each
// choice's last with its finish_reason, then [DONE].
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, head completion, events <-chan genEvent, n int, lp *int, m *tokenmix.Model) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush() // the client learns at once that the request was admitted
	// send writes one event, and flushes unless more are waiting (they
	// go out together).
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return len(events) > 0 || rc.Flush() == nil
	}
	pending := make([]*tokenmix.TextStream, n) // bytes held back until they form whole UTF-8 characters
	for i := range pending {
		pending[i] = m.NewTextStream()
	}
	for left := n; left > 0; {
		var e genEvent
		select {
		case e = <-events:
		case <-ctx.Done():
			e = genEvent{done: true, err: ctxError(ctx)}
		}
		if e.done && e.err != nil {
			var ae apiError
			ae.Error.Message, ae.Error.Type = e.err.Error(), "server_error"
			if he, ok := e.err.(*httpError); ok {
				ae.Error.Type = he.typ
			}
			send(ae)
			break
		}
		ev := head
		c := choice{Index: e.index}
		if e.done {
			c.Text = pending[e.index].Flush()
			reason := finishReason(e.res.FinishReason)
			c.FinishReason = &reason
			left--
		} else {
			c.Text = pending[e.index].Next(e.tok.ID)
			if lp != nil {
				var st choiceState
				st.add(e.tok)
				c.Logprobs = st.logprobs(*lp)
			}
		}
		ev.Choices = []choice{c}
		if !send(ev) {
			return // the client went away; ctx ends the generation
		}
	}
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// choiceState gathers one choice's tokens.
type choiceState struct {
	ids    []int32
	lps    []float32
	top    []int32
	topLPs []float32
	finish string
}

func (c *choiceState) add(t tokenmix.Token) {
	c.ids, c.lps = append(c.ids, t.ID), append(c.lps, t.LogProb)
	c.top, c.topLPs = append(c.top, t.TopID), append(c.topLPs, t.TopLogProb)
}

func (c *choiceState) logprobs(n int) *logprobs {
	l := &logprobs{Tokens: c.ids, TokenLogprobs: c.lps}
	if l.Tokens == nil {
		l.Tokens, l.TokenLogprobs = []int32{}, []float32{}
	}
	if n == 1 {
		l.TopLogprobs = make([]map[string]float32, len(c.top))
		for i, t := range c.top {
			l.TopLogprobs[i] = map[string]float32{strconv.Itoa(int(t)): c.topLPs[i]}
		}
	}
	return l
}

// finishReason is the OpenAI name of a Result's finish reason.
func finishReason(r string) string {
	if r == "stop" {
		return "stop"
	}
	return "length" // MaxTokens or the model's max_len
}

// checkCompletion checks a completions request against the model and the
// caps, and returns each prompt's tokens and generation options.
func (s *Server) checkCompletion(sv *served, req *completionRequest) ([]tokenmix.GenerateOptions, [][]int32, error) {
	if !sv.generates() {
		return nil, nil, badRequest("model %q is a %s model; completions need a causal language model", sv.name, sv.kindName())
	}
	texts, err := stringOrList(req.Prompt, "prompt")
	if err != nil {
		return nil, nil, err
	}
	switch {
	case texts == nil:
		return nil, nil, badRequest(`missing "prompt"`)
	case len(texts) == 0:
		return nil, nil, badRequest(`"prompt" is an empty array`)
	case len(texts) > s.cfg.MaxInputs:
		return nil, nil, badRequest("%d prompts, more than the cap of %d per request (--max-inputs)", len(texts), s.cfg.MaxInputs)
	}
	limit, what := sv.maxInput(s.cfg.MaxInputTokens)
	limit = min(limit, sv.cfg.MaxLen-1) // room for one token
	var prompts [][]int32
	for i, t := range texts {
		p := sv.m.Encode(t)
		switch {
		case len(p) == 0:
			return nil, nil, badRequest("prompt %d is empty", i)
		case len(p) > limit:
			if limit == sv.cfg.MaxLen-1 {
				what = fmt.Sprintf("%d, one below model %q's max_len %d", limit, sv.name, sv.cfg.MaxLen)
			}
			return nil, nil, badRequest("prompt %d has %d tokens, more than %s", i, len(p), what)
		}
		prompts = append(prompts, p)
	}
	if req.Logprobs != nil && *req.Logprobs != 0 && *req.Logprobs != 1 {
		return nil, nil, badRequest(`"logprobs" %d: 0 (the tokens' log-probabilities) or 1 (and each step's most probable token)`, *req.Logprobs)
	}
	o, err := s.genOptions(sv, req.MaxTokens, req.Temperature, req.TopP, req.Stop)
	if err != nil {
		return nil, nil, err
	}
	opts := make([]tokenmix.GenerateOptions, len(prompts))
	for i := range opts {
		opts[i] = o
		opts[i].Seed = seedOf(req.Seed)
	}
	return opts, prompts, nil
}

// seedOf is a request's seed, or a random one.
func seedOf(seed *uint64) uint64 {
	if seed != nil {
		return *seed
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// genOptions checks a generation request's max_tokens, temperature,
// top_p and stop against the caps, and returns them as options.
func (s *Server) genOptions(sv *served, maxTokens *int, temperature, topP *float64, stop json.RawMessage) (tokenmix.GenerateOptions, error) {
	o := tokenmix.GenerateOptions{MaxTokens: defaultMaxTokens, Temperature: 1}
	if maxTokens != nil {
		o.MaxTokens = *maxTokens
	}
	switch {
	case o.MaxTokens < 1:
		return o, badRequest(`"max_tokens" %d: at least 1`, o.MaxTokens)
	case o.MaxTokens > s.cfg.MaxNewTokens:
		return o, badRequest(`"max_tokens" %d is over the cap of %d (--max-new-tokens)`, o.MaxTokens, s.cfg.MaxNewTokens)
	}
	if temperature != nil {
		if o.Temperature = *temperature; o.Temperature < 0 || o.Temperature > 2 || math.IsNaN(o.Temperature) {
			return o, badRequest(`"temperature" %v: in [0, 2]`, o.Temperature)
		}
	}
	if topP != nil {
		if o.TopP = *topP; !(o.TopP > 0 && o.TopP <= 1) {
			return o, badRequest(`"top_p" %v: in (0, 1]`, o.TopP)
		}
	}
	stops, err := stringOrList(stop, "stop")
	if err != nil {
		return o, err
	}
	if len(stops) > 4 {
		return o, badRequest(`"stop" has %d sequences, at most 4`, len(stops))
	}
	for i, st := range stops {
		if st == "" {
			return o, badRequest(`"stop" sequence %d is empty`, i)
		}
		o.Stop = append(o.Stop, sv.m.Encode(st))
	}
	return o, nil
}
