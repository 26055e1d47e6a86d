package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokenmix/tokenmix"
)

// Config configures a Server. Zero values take the defaults of Defaults.
type Config struct {
	// Addr is the address Run listens on.
	Addr string
	// BatchWindow is how long a classify or score batch waits for more
	// requests after its first; MaxBatch the most sequences in one pass.
	BatchWindow time.Duration
	MaxBatch    int
	// MaxStreams is the most generations of one model stepped together.
	MaxStreams int
	// Queue is the most requests one model admits at a time, waiting or
	// running; one more is answered 429.
	Queue int
	// MaxBodyBytes caps a request body (413 beyond), MaxInputs the inputs
	// or prompts per request, MaxInputTokens the tokens per input (0: the
	// model's max_len), MaxNewTokens a completion's max_tokens.
	MaxBodyBytes   int64
	MaxInputs      int
	MaxInputTokens int
	MaxNewTokens   int
	// Timeout bounds one request's work.
	Timeout time.Duration
	// MaxMemory, when positive, is the memory budget of what requests use
	// beside the models' weights: each model's pass workspace (which grows
	// to its largest pass and stays) and the decoding states of the
	// generations under way. A request reserves its planned bytes
	// (Model.PassBytes, Model.StreamBytes) before it runs; one that does
	// not fit waits, and gets 503 with Retry-After when its Timeout passes
	// first; one that cannot fit even alone gets 400.
	MaxMemory int64
	// The http.Server's limits: ReadHeaderTimeout, ReadTimeout,
	// WriteTimeout (a stream extends it per event), IdleTimeout and
	// MaxHeaderBytes.
	HeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                        int
	// Token, when set, is the bearer token every request but the health
	// checks must carry.
	Token string
	// InsecureBind allows a non-loopback Addr without a Token.
	InsecureBind bool
	// Log receives one access-log line per request (nil: none).
	Log io.Writer
}

// Defaults are the values a zero Config field takes.
var Defaults = Config{
	Addr:           "127.0.0.1:8080",
	BatchWindow:    2 * time.Millisecond,
	MaxBatch:       32,
	MaxStreams:     16,
	Queue:          64,
	MaxBodyBytes:   1 << 20,
	MaxInputs:      64,
	MaxNewTokens:   512,
	Timeout:        60 * time.Second,
	HeaderTimeout:  5 * time.Second,
	ReadTimeout:    30 * time.Second,
	WriteTimeout:   60 * time.Second,
	IdleTimeout:    60 * time.Second,
	MaxHeaderBytes: 16 << 10,
}

func (c *Config) setDefaults() {
	d := Defaults
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	for _, p := range []struct{ v, d *time.Duration }{
		{&c.BatchWindow, &d.BatchWindow}, {&c.Timeout, &d.Timeout}, {&c.HeaderTimeout, &d.HeaderTimeout},
		{&c.ReadTimeout, &d.ReadTimeout}, {&c.WriteTimeout, &d.WriteTimeout}, {&c.IdleTimeout, &d.IdleTimeout},
	} {
		if *p.v == 0 {
			*p.v = *p.d
		}
	}
	for _, p := range []struct{ v, d *int }{
		{&c.MaxBatch, &d.MaxBatch}, {&c.MaxStreams, &d.MaxStreams}, {&c.Queue, &d.Queue},
		{&c.MaxInputs, &d.MaxInputs}, {&c.MaxNewTokens, &d.MaxNewTokens}, {&c.MaxHeaderBytes, &d.MaxHeaderBytes},
	} {
		if *p.v == 0 {
			*p.v = *p.d
		}
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
}

// Server serves a set of named models over HTTP. Create it with New, run
// it with Serve or Run, stop it with Shutdown.
type Server struct {
	cfg    Config
	models map[string]*served
	names  []string // sorted
	met    *metrics
	http   *http.Server
	mem    *memPool // nil without MaxMemory

	base     context.Context // cancelled when Shutdown's deadline passes
	cancel   context.CancelFunc
	draining atomic.Bool // set under mu
	mu       sync.Mutex
	inflight int            // requests past the drain check, under mu
	idle     chan struct{}  // closed when inflight reaches 0 while draining
	workers  sync.WaitGroup // batchers and schedulers
	stopOnce sync.Once
	// stepHook, when set (by tests), runs before each generation step.
	stepHook func()
}

// New returns a server for models (name → model) under cfg. It starts each
// model's batcher and, for a causal lm, its generation scheduler.
func New(cfg Config, models map[string]*tokenmix.Model) (*Server, error) {
	cfg.setDefaults()
	if len(models) == 0 {
		return nil, fmt.Errorf("serve: no models")
	}
	if err := checkBind(cfg.Addr, cfg.Token != "", cfg.InsecureBind); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		v    int64
	}{{"MaxBatch", int64(cfg.MaxBatch)}, {"MaxStreams", int64(cfg.MaxStreams)}, {"Queue", int64(cfg.Queue)},
		{"MaxBodyBytes", cfg.MaxBodyBytes}, {"MaxInputs", int64(cfg.MaxInputs)}, {"MaxNewTokens", int64(cfg.MaxNewTokens)},
		{"MaxInputTokens", int64(cfg.MaxInputTokens) + 1}} {
		if v.v < 1 {
			return nil, fmt.Errorf("serve: %s must be positive", v.name)
		}
	}
	if cfg.MaxMemory < 0 {
		return nil, fmt.Errorf("serve: MaxMemory must not be negative")
	}
	s := &Server{cfg: cfg, models: map[string]*served{}, met: newMetrics()}
	if cfg.MaxMemory > 0 {
		s.mem = newMemPool(cfg.MaxMemory)
	}
	s.base, s.cancel = context.WithCancel(context.Background())
	for name, m := range models {
		if name == "" || strings.ContainsAny(name, " \t\n\"") {
			return nil, fmt.Errorf("serve: model name %q: names are non-empty, without spaces or quotes", name)
		}
		sv := newServed(s, name, m)
		s.models[name] = sv
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	s.met.queueDepth(s)
	for _, sv := range s.models {
		sv.start()
	}
	s.http = &http.Server{
		Addr:              cfg.Addr,
		Handler:           s.handler(),
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          nil,
	}
	return s, nil
}

// checkBind refuses a non-loopback address without a token unless
// insecure.
func checkBind(addr string, token, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: address %q: %w", addr, err)
	}
	if token || insecure || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("serve: %q is not a loopback address: serving on it needs a token (--token-file) or --insecure-bind", addr)
}

// Handler returns the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve serves on l until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve(l net.Listener) error {
	if err := s.http.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Run listens on Config.Addr and serves until Shutdown.
func (s *Server) Run() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Shutdown drains the server: new requests get 503 and /readyz turns
// 503, while requests in flight (streams included) finish. When they
// have, or when ctx is done (their work is then cancelled), it closes the
// listeners and connections and stops the batchers and schedulers. It
// returns ctx's error if the deadline cut requests short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	if s.idle == nil {
		s.idle = make(chan struct{})
		if s.inflight == 0 {
			close(s.idle)
		}
	}
	idle := s.idle
	s.mu.Unlock()
	var cut error
	select {
	case <-idle:
	case <-ctx.Done():
		cut = ctx.Err()
		s.cancel() // ends the work of the requests still running
		<-idle
	}
	// The handlers have returned; net/http still ends their responses
	// (a stream's last chunk) before the connections go idle and close.
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = s.http.Close()
	}
	s.stop()
	if cut != nil {
		return cut
	}
	return err
}

// stop ends the batchers and schedulers and waits for them.
func (s *Server) stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		for _, sv := range s.models {
			close(sv.quit)
		}
		s.workers.Wait()
	})
}

// reqInfo is what the middleware and the handlers share about a request.
type reqInfo struct {
	id       string
	endpoint string
	model    string // a served model's name, for metrics and the log
	status   int
	bytes    int64
}

type infoKey struct{}

func info(r *http.Request) *reqInfo { return r.Context().Value(infoKey{}).(*reqInfo) }

// recorder keeps the status and size of a response for the log and
// metrics; Unwrap lets http.ResponseController reach the connection.
type recorder struct {
	http.ResponseWriter
	ri *reqInfo
}

func (w *recorder) WriteHeader(code int) {
	if w.ri.status == 0 {
		w.ri.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.ri.status == 0 {
		w.ri.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.ri.bytes += int64(n)
	return n, err
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route is one endpoint: its method and handler.
type route struct {
	method, endpoint string
	h                func(http.ResponseWriter, *http.Request)
	open             bool // no token needed, served while draining
}

// handler is the middleware around the routes: request ID, access log and
// metrics, panic recovery, drain check, authentication, routing.
func (s *Server) handler() http.Handler {
	routes := map[string]route{
		"/v1/classify":         {http.MethodPost, "classify", s.classify, false},
		"/v1/score":            {http.MethodPost, "score", s.score, false},
		"/v1/tag":              {http.MethodPost, "tag", s.tag, false},
		"/v1/embeddings":       {http.MethodPost, "embeddings", s.embeddings, false},
		"/v1/completions":      {http.MethodPost, "completions", s.completions, false},
		"/v1/chat/completions": {http.MethodPost, "chat", s.chatCompletions, false},
		"/v1/models":           {http.MethodGet, "models", s.listModels, false},
		"/healthz":             {http.MethodGet, "healthz", s.healthz, true},
		"/readyz":              {http.MethodGet, "readyz", s.readyz, true},
		"/metrics":             {http.MethodGet, "metrics", s.met.handler().ServeHTTP, false},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt, found := routes[r.URL.Path]
		ri := &reqInfo{id: requestID(r.Header.Get("X-Request-Id")), endpoint: "other"}
		if found {
			ri.endpoint = rt.endpoint
		}
		w.Header().Set("X-Request-Id", ri.id)
		rec := &recorder{ResponseWriter: w, ri: ri}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, ri))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				if ri.status == 0 {
					writeError(rec, http.StatusInternalServerError, "server_error", fmt.Sprintf("internal error: %v", p))
				}
			}
			s.met.observe(ri, time.Since(start))
			s.logRequest(r, ri, time.Since(start))
		}()
		switch {
		case !found:
			writeError(rec, http.StatusNotFound, "not_found_error", fmt.Sprintf("no endpoint %s", r.URL.Path))
			return
		case r.Method != rt.method:
			rec.Header().Set("Allow", rt.method)
			writeError(rec, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, rt.method, r.Method))
			return
		}
		if !rt.open {
			if !s.enter() {
				s.met.reject("", "draining")
				rec.Header().Set("Connection", "close")
				rec.Header().Set("Retry-After", "1")
				writeError(rec, http.StatusServiceUnavailable, "unavailable_error", "the server is shutting down")
				return
			}
			defer s.leave()
			if !s.authorized(r) {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="tokenmix"`)
				writeError(rec, http.StatusUnauthorized, "authentication_error", "a valid bearer token is required (Authorization: Bearer …)")
				return
			}
		}
		rt.h(rec, r)
	})
}

// enter counts a request in flight, or reports false while draining.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.inflight++
	return true
}

// leave ends a request counted by enter.
func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight--; s.inflight == 0 && s.idle != nil {
		close(s.idle)
	}
}

// authorized reports whether r carries the server's token (always, when
// the server has none).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// requestID returns the client's X-Request-Id when it is short and plain,
// else a fresh random one.
func requestID(h string) string {
	if h != "" && len(h) <= 64 && strings.Trim(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return h
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// logRequest writes the request's access-log line.
func (s *Server) logRequest(r *http.Request, ri *reqInfo, d time.Duration) {
	if s.cfg.Log == nil {
		return
	}
	model := ri.model
	if model == "" {
		model = "-"
	}
	fmt.Fprintf(s.cfg.Log, "%s id=%s remote=%s %s %s status=%d bytes=%d model=%s dur=%.1fms\n",
		time.Now().UTC().Format(time.RFC3339), ri.id, r.RemoteAddr, r.Method, r.URL.Path, ri.status, ri.bytes, model, float64(d)/1e6)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "the server is shutting down")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "models": s.names})
}

// modelInfo is one entry of GET /v1/models.
type modelInfo struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Created   int64  `json:"created"`
	OwnedBy   string `json:"owned_by"`
	Task      string `json:"task"`
	Causal    bool   `json:"causal"`
	Mixer     string `json:"mixer"`
	MaxLen    int    `json:"max_len"`
	VocabSize int    `json:"vocab_size"`
	Step      int    `json:"step"`
	// Tokenizer is the pattern of the tokenizer the model reads text
	// through (gpt2, cl100k, o200k, blocks), or "bytes".
	Tokenizer string `json:"tokenizer"`
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	data := []modelInfo{}
	for _, n := range s.names {
		c := s.models[n].cfg
		tok := "bytes"
		if tk := s.models[n].m.Tokenizer(); tk != nil {
			tok = tk.Pattern().String()
		}
		data = append(data, modelInfo{ID: n, Object: "model", OwnedBy: "tokenmix", Task: c.Task, Causal: c.Causal,
			Mixer: c.Mixer, MaxLen: c.MaxLen, VocabSize: c.VocabSize, Step: c.Step, Tokenizer: tok})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
