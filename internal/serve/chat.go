package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/tokenmix/tokenmix"
)

// chatRequest is the body of POST /v1/chat/completions: OpenAI's chat
// completions, one choice. The fields tokenmix cannot honour are read so
// that their presence is an error naming them.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *uint64         `json:"seed"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs    *bool   `json:"logprobs"`
	TopLogprobs *int    `json:"top_logprobs"`
	N           *int    `json:"n"`
	User        string  `json:"user"`
	Frequency   float64 `json:"frequency_penalty"`
	Presence    float64 `json:"presence_penalty"`

	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`
	ResponseFormat    json.RawMessage `json:"response_format"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	Modalities        json.RawMessage `json:"modalities"`
	Audio             json.RawMessage `json:"audio"`
}

// chatMessage is a message of a request: content a string, or an array
// of text parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// chatCompletion is a response body, or one streamed chunk.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatOut      `json:"message,omitempty"`
	Delta        *chatOut      `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatOut struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// chatLogprobs is OpenAI's chat logprobs: per token its text, bytes,
// log-probability and, with top_logprobs 1, the most probable token.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string             `json:"token"`
	Logprob     float32            `json:"logprob"`
	Bytes       []int              `json:"bytes"`
	TopLogprobs []chatTokenLogprob `json:"top_logprobs,omitempty"`
}

// unsupported names the fields of req that tokenmix cannot honour.
func (req *chatRequest) unsupported() []string {
	var out []string
	for name, v := range map[string]json.RawMessage{"tools": req.Tools, "tool_choice": req.ToolChoice,
		"parallel_tool_calls": req.ParallelToolCalls, "functions": req.Functions, "function_call": req.FunctionCall,
		"response_format": req.ResponseFormat, "logit_bias": req.LogitBias, "modalities": req.Modalities, "audio": req.Audio} {
		if len(v) > 0 && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			out = append(out, name)
		}
	}
	if req.N != nil && *req.N != 1 {
		out = append(out, fmt.Sprintf("n = %d (one choice per request)", *req.N))
	}
	if req.Frequency != 0 {
		out = append(out, "frequency_penalty")
	}
	if req.Presence != 0 {
		out = append(out, "presence_penalty")
	}
	sort.Strings(out)
	return out
}

// messages is req's messages as the model's, with each content's text.
func (req *chatRequest) messages() ([]tokenmix.Message, error) {
	if req.Messages == nil {
		return nil, badRequest(`missing "messages"`)
	}
	out := make([]tokenmix.Message, len(req.Messages))
	for i, m := range req.Messages {
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil || len(m.Content) == 0 {
				return nil, badRequest("messages[%d].content: want a string or an array of text parts", i)
			}
			for j, p := range parts {
				if p.Type != "text" {
					return nil, badRequest("messages[%d].content[%d]: type %q: only text parts are supported", i, j, p.Type)
				}
				text += p.Text
			}
		}
		out[i] = tokenmix.Message{Role: m.Role, Content: text}
	}
	return out, nil
}

// chatCompletions serves POST /v1/chat/completions: the messages rendered
// through the model's chat template (Model.ChatPrompt), generated as
// completions are, answered in the shape of OpenAI's chat completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := decode(r, s.cfg.MaxBodyBytes, &req); err != nil {
		fail(w, err)
		return
	}
	sv, err := s.model(r, req.Model)
	if err != nil {
		fail(w, err)
		return
	}
	prompt, o, err := s.checkChat(sv, &req)
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
	events, err := s.startJobs(ctx, sv, [][]int32{prompt}, []tokenmix.GenerateOptions{o})
	if err != nil {
		fail(w, err)
		return
	}
	head := chatCompletion{ID: "chatcmpl-" + info(r).id, Object: "chat.completion", Created: time.Now().Unix(), Model: sv.name}
	top := -1 // no logprobs
	if req.Logprobs != nil && *req.Logprobs {
		top = 0
		if req.TopLogprobs != nil {
			top = *req.TopLogprobs
		}
	}
	if req.Stream {
		head.Object = "chat.completion.chunk"
		s.streamChat(w, ctx, head, events, top, len(prompt), req.StreamOptions != nil && req.StreamOptions.IncludeUsage, sv.m)
		return
	}
	outs, err := collect(ctx, events, 1)
	if err != nil {
		fail(w, err)
		return
	}
	o0 := outs[0]
	text := sv.m.Text(o0.ids)
	c := chatChoice{Message: &chatOut{Role: "assistant", Content: &text}, FinishReason: &o0.finish}
	if top >= 0 {
		c.Logprobs = &chatLogprobs{Content: []chatTokenLogprob{}}
		for i := range o0.ids {
			c.Logprobs.Content = append(c.Logprobs.Content, chatLogprob(sv.m, o0, i, top))
		}
	}
	head.Choices = []chatChoice{c}
	head.Usage = &usage{len(prompt), len(o0.ids), len(prompt) + len(o0.ids)}
	writeJSON(w, http.StatusOK, head)
}

// chatLogprob is token i of c in OpenAI's chat logprobs shape, with the
// step's most probable token when top is 1.
func chatLogprob(m *tokenmix.Model, c choiceState, i, top int) chatTokenLogprob {
	one := func(id int32, lp float32) chatTokenLogprob {
		s, _ := m.Decode([]int32{id})
		b := make([]int, len(s))
		for k := 0; k < len(s); k++ {
			b[k] = int(s[k])
		}
		return chatTokenLogprob{Token: s, Logprob: lp, Bytes: b}
	}
	t := one(c.ids[i], c.lps[i])
	t.TopLogprobs = []chatTokenLogprob{}
	if top == 1 {
		t.TopLogprobs = append(t.TopLogprobs, one(c.top[i], c.topLPs[i]))
	}
	return t
}

// checkChat checks a chat request against the model and the caps, and
// returns the prompt and the generation options.
func (s *Server) checkChat(sv *served, req *chatRequest) ([]int32, tokenmix.GenerateOptions, error) {
	var o tokenmix.GenerateOptions
	if u := req.unsupported(); len(u) > 0 {
		return nil, o, badRequest("unsupported: %v (tokenmix generates one plain-text reply)", u)
	}
	if !sv.generates() {
		return nil, o, badRequest("model %q is a %s model; chat needs a causal language model", sv.name, sv.kindName())
	}
	msgs, err := req.messages()
	if err != nil {
		return nil, o, err
	}
	prompt, stop, err := sv.m.ChatPrompt(msgs)
	if err != nil {
		return nil, o, badRequest("%v", trimPrefix(err))
	}
	limit, what := sv.maxInput(s.cfg.MaxInputTokens)
	if limit = min(limit, sv.cfg.MaxLen-1); len(prompt) > limit {
		if limit == sv.cfg.MaxLen-1 {
			what = fmt.Sprintf("%d, one below model %q's max_len %d", limit, sv.name, sv.cfg.MaxLen)
		}
		return nil, o, badRequest("the rendered messages have %d tokens, more than %s", len(prompt), what)
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		if maxTokens != nil {
			return nil, o, badRequest(`give "max_tokens" or "max_completion_tokens", not both`)
		}
		maxTokens = req.MaxCompletionTokens
	}
	if o, err = s.genOptions(sv, maxTokens, req.Temperature, req.TopP, req.Stop); err != nil {
		return nil, o, err
	}
	switch {
	case req.TopLogprobs != nil && (req.Logprobs == nil || !*req.Logprobs):
		return nil, o, badRequest(`"top_logprobs" needs "logprobs": true`)
	case req.TopLogprobs != nil && (*req.TopLogprobs < 0 || *req.TopLogprobs > 1):
		return nil, o, badRequest(`"top_logprobs" %d: 0 or 1 (tokenmix reports each step's most probable token)`, *req.TopLogprobs)
	}
	o.Stop = append(o.Stop, stop)
	o.Seed = seedOf(req.Seed)
	return prompt, o, nil
}

// trimPrefix is err's message without the package's "tokenmix: ".
func trimPrefix(err error) string {
	const p = "tokenmix: "
	s := err.Error()
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// streamChat writes a chat completion as server-sent chunks: the role
// first, then one chunk per token (whole UTF-8 characters), the finish
// reason, with include_usage a chunk of usage, and [DONE].
func (s *Server) streamChat(w http.ResponseWriter, ctx context.Context, head chatCompletion, events <-chan genEvent, top, promptTokens int, withUsage bool, m *tokenmix.Model) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
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
	empty := ""
	first := head
	first.Choices = []chatChoice{{Delta: &chatOut{Role: "assistant", Content: &empty}}}
	if !send(first) {
		return
	}
	pending := m.NewTextStream()
	n := 0
	for {
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
		c := chatChoice{Delta: &chatOut{}}
		if e.done {
			if rest := pending.Flush(); rest != "" {
				c.Delta.Content = &rest
			}
			reason := finishReason(e.res.FinishReason)
			c.FinishReason = &reason
		} else {
			n++
			text := pending.Next(e.tok.ID)
			c.Delta.Content = &text
			if top >= 0 {
				var st choiceState
				st.add(e.tok)
				c.Logprobs = &chatLogprobs{Content: []chatTokenLogprob{chatLogprob(m, st, 0, top)}}
			}
		}
		ev.Choices = []chatChoice{c}
		if !send(ev) {
			return // the client went away; ctx ends the generation
		}
		if e.done {
			if withUsage {
				u := head
				u.Choices = []chatChoice{}
				u.Usage = &usage{promptTokens, n, promptTokens + n}
				send(u)
			}
			break
		}
	}
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}
