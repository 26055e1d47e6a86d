package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// apiError is the body of every error response.
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// httpError is an error with the status and type it is answered with.
type httpError struct {
	status int
	typ    string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) *httpError {
	return &httpError{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type = msg, typ
	writeJSON(w, status, e)
}

// fail answers err: an *httpError with its status, anything else 500.
func fail(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		if he.status == http.StatusTooManyRequests || he.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, he.status, he.typ, he.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, "server_error", err.Error())
}

// decode reads r's body, at most max bytes, as exactly one JSON object
// into v (whatever the Content-Type: `curl -d` sends a form's): unknown
// fields, trailing data and a body over the cap are errors naming the
// problem.
func decode(r *http.Request, max int64, v any) error {
	body := http.MaxBytesReader(nil, r.Body, max)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			linger(r)
		}
		return decodeError(err, max)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return badRequest("the body holds more than one JSON value")
		}
		return decodeError(err, max)
	}
	return nil
}

// lingerBytes bounds what linger reads and discards of a body over the
// cap; the server's read timeout (--read-timeout) bounds its time.
const lingerBytes = 256 << 20

// linger reads and discards the rest of a body that is over the cap, up
// to lingerBytes, before the 413 is written (nginx's lingering close): a
// client that sends its whole body before it reads (Python's urllib and
// requests, without Expect: 100-continue) then reads the answer instead of
// a connection reset. Nothing of it is kept.
func linger(r *http.Request) {
	_, _ = io.CopyN(io.Discard, r.Body, lingerBytes)
}

// decodeError turns a JSON decoding error into a 4xx.
func decodeError(err error, max int64) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return &httpError{http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("the body is over the cap of %d bytes (--max-body)", max)}
	case errors.Is(err, io.EOF):
		return badRequest("the body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the body ends inside its JSON value")
	case errors.As(err, &se):
		return badRequest("invalid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			return badRequest("the body must be a JSON object, not %s", ute.Value)
		}
		return badRequest("field %q: %s where %s was expected", field, ute.Value, ute.Type)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest("unknown or unsupported field %s", f)
	}
	return badRequest("invalid request body: %v", err)
}

// inputsRequest is the body of classify and score.
type inputsRequest struct {
	Model  string    `json:"model"`
	Inputs []string  `json:"inputs"`
	Tokens [][]int32 `json:"tokens"`
}

// sequences checks req against sv and the caps and returns its token
// sequences; minLen is the shortest allowed (2 for score).
func (s *Server) sequences(sv *served, req *inputsRequest, minLen int) ([][]int32, error) {
	switch {
	case req.Inputs != nil && req.Tokens != nil:
		return nil, badRequest(`give "inputs" (texts) or "tokens" (token ids), not both`)
	case req.Inputs == nil && req.Tokens == nil:
		return nil, badRequest(`missing "inputs" (texts) or "tokens" (token ids)`)
	}
	var seqs [][]int32
	if req.Inputs != nil {
		for _, t := range req.Inputs {
			seqs = append(seqs, sv.m.Encode(t))
		}
	} else {
		seqs = req.Tokens
	}
	switch {
	case len(seqs) == 0:
		return nil, badRequest("no inputs")
	case len(seqs) > s.cfg.MaxInputs:
		return nil, badRequest("%d inputs, more than the cap of %d per request (--max-inputs)", len(seqs), s.cfg.MaxInputs)
	}
	limit, what := sv.maxInput(s.cfg.MaxInputTokens)
	for i, q := range seqs {
		switch {
		case len(q) < minLen:
			return nil, badRequest("input %d has %d tokens; this endpoint needs at least %d", i, len(q), minLen)
		case len(q) > limit:
			return nil, badRequest("input %d has %d tokens, more than %s", i, len(q), what)
		}
		for j, v := range q {
			if v < 0 || int(v) >= sv.cfg.VocabSize {
				return nil, badRequest("input %d: token %d at position %d is outside the vocabulary [0, %d)", i, v, j, sv.cfg.VocabSize)
			}
		}
	}
	return seqs, nil
}

// model returns the served model a request names.
func (s *Server) model(r *http.Request, name string) (*served, error) {
	if name == "" {
		return nil, badRequest(`missing "model": one of %s`, strings.Join(s.names, ", "))
	}
	sv, ok := s.models[name]
	if !ok {
		return nil, &httpError{http.StatusNotFound, "not_found_error", fmt.Sprintf("no model %q: the models are %s", name, strings.Join(s.names, ", "))}
	}
	info(r).model = name
	return sv, nil
}

func (s *Server) classify(w http.ResponseWriter, r *http.Request) { s.batchEndpoint(w, r, "classify") }
func (s *Server) score(w http.ResponseWriter, r *http.Request)    { s.batchEndpoint(w, r, "score") }
func (s *Server) tag(w http.ResponseWriter, r *http.Request)      { s.batchEndpoint(w, r, "tag") }

// admitted admits a request to sv (its queue slots) and gives it the
// server's timeout: done releases both.
func (s *Server) admitted(r *http.Request, sv *served) (context.Context, func(), error) {
	release, err := sv.admit()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := contextWithTimeout(r, s.cfg.Timeout)
	return ctx, func() { cancel(); release() }, nil
}

// batchEndpoint serves classify, score and tag: check, admit, batch,
// answer.
func (s *Server) batchEndpoint(w http.ResponseWriter, r *http.Request, op string) {
	var req inputsRequest
	if err := decode(r, s.cfg.MaxBodyBytes, &req); err != nil {
		fail(w, err)
		return
	}
	sv, err := s.model(r, req.Model)
	if err != nil {
		fail(w, err)
		return
	}
	minLen := 1
	switch {
	case op == "classify" && sv.cfg.Task != "classify":
		fail(w, badRequest("model %q is a %s model; classify needs a classifier", sv.name, sv.kindName()))
		return
	case op == "tag" && sv.cfg.Task != "tag":
		fail(w, badRequest("model %q is a %s model; tag needs a tagger (task \"tag\")", sv.name, sv.kindName()))
		return
	case op == "score" && (sv.cfg.Task != "lm" || !sv.cfg.Causal):
		fail(w, badRequest("model %q is a %s model; score needs a causal language model", sv.name, sv.kindName()))
		return
	case op == "score":
		minLen = 2
	}
	seqs, err := s.sequences(sv, &req, minLen)
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
	results, err := sv.batch(ctx, seqs)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": sv.name, "results": results})
}
