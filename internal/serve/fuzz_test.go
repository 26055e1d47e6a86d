package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// FuzzRequest: any body, on any endpoint, gets a JSON answer with a status
// below 500 (an error, or a result), never a panic.
func FuzzRequest(f *testing.F) {
	for _, seed := range []struct {
		path uint8
		body string
	}{
		{0, `{"model": "spam", "inputs": ["win a prize"]}`},
		{0, `{"model": "spam", "tokens": [[1, 2, 256]]}`},
		{1, `{"model": "fox", "inputs": ["the quick"]}`},
		{2, `{"model": "fox", "prompt": ["a", "b"], "max_tokens": 3, "stop": "x", "seed": 1, "logprobs": 1}`},
		{2, `{"model": "fox", "prompt": "a", "stream": true, "temperature": 0.5, "top_p": 0.9}`},
		{0, `{"model": "spam", "inputs": null}`},
		{1, `[`},
		{2, `{"model": "fox", "prompt": "\xff\xfe", "max_tokens": 1e9}`},
		{3, `{"model": "fox", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "seed": 2, "logprobs": true, "top_logprobs": 1}`},
		{3, `{"model": "fox", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}], "stream": true, "stream_options": {"include_usage": true}}`},
		{3, `{"model": "fox", "messages": [{"role": "system", "content": "a"}], "tools": []}`},
		{4, `{"model": "spam", "inputs": ["a b"]}`},
		{5, `{"model": "spam", "input": ["a", [1, 2]], "encoding_format": "base64"}`},
	} {
		f.Add(seed.path, []byte(seed.body))
	}
	ms := loadModels(f)
	s, err := New(Config{MaxBodyBytes: 4096, MaxInputs: 4, MaxNewTokens: 8, Timeout: 2 * time.Second}, ms)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	h := s.Handler()
	paths := []string{"/v1/classify", "/v1/score", "/v1/completions", "/v1/chat/completions", "/v1/tag", "/v1/embeddings"}
	f.Fuzz(func(t *testing.T, path uint8, body []byte) {
		req := httptest.NewRequest(http.MethodPost, paths[int(path)%len(paths)], bytes.NewReader(body))
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { h.ServeHTTP(rec, req); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("%s %q: no answer after 10 s\n%s", req.URL.Path, body, buf[:runtime.Stack(buf, true)])
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", req.URL.Path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code != http.StatusOK {
			var e apiError
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("%s %q: status %d without a JSON error: %s", req.URL.Path, body, rec.Code, rec.Body.Bytes())
			}
		}
	})
}
