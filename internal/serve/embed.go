package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
)

// embeddingsRequest is the body of POST /v1/embeddings: OpenAI's shape.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// embedding is one input's answer: its vector as floats, or as the
// base64 of little-endian float32s (encoding_format "base64").
type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// inputs reads OpenAI's input: a string, an array of strings, an array
// of token ids, or an array of such arrays.
func (req *embeddingsRequest) inputs() (*inputsRequest, error) {
	raw := bytes.TrimSpace(req.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(`missing "input" (a string, an array of strings, or token arrays)`)
	}
	out := &inputsRequest{Model: req.Model}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		out.Inputs = []string{one}
		return out, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		out.Inputs = texts
		return out, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		out.Tokens = [][]int32{ids}
		return out, nil
	}
	var seqs [][]int32
	if json.Unmarshal(raw, &seqs) == nil {
		out.Tokens = seqs
		return out, nil
	}
	return nil, badRequest(`"input": want a string, an array of strings, an array of token ids or an array of token arrays`)
}

// embeddings serves POST /v1/embeddings, batched like classify.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if err := decode(r, s.cfg.MaxBodyBytes, &req); err != nil {
		fail(w, err)
		return
	}
	sv, err := s.model(r, req.Model)
	if err != nil {
		fail(w, err)
		return
	}
	if sv.cfg.Task != "embed" {
		fail(w, badRequest("model %q is a %s model; embeddings need an embedder (task \"embed\")", sv.name, sv.kindName()))
		return
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		fail(w, badRequest(`"encoding_format" %q: "float" or "base64"`, req.EncodingFormat))
		return
	}
	if req.Dimensions != nil && *req.Dimensions != sv.cfg.DModel {
		fail(w, badRequest(`"dimensions" %d: model %q's embeddings have %d (d_model)`, *req.Dimensions, sv.name, sv.cfg.DModel))
		return
	}
	in, err := req.inputs()
	if err != nil {
		fail(w, err)
		return
	}
	seqs, err := s.sequences(sv, in, 1)
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
	data := make([]embedding, 0, len(seqs))
	tokens := 0
	for i, res := range results {
		e := res.([]float32)
		var v any = e
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(e))
			for k, f := range e {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(f))
			}
			v = base64.StdEncoding.EncodeToString(b)
		}
		data = append(data, embedding{Object: "embedding", Index: i, Embedding: v})
		tokens += len(seqs[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": sv.name,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}
