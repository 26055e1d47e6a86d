package main

import (
	"bufio"
	"compress/gzip"
	stdctx "context"
	"encoding/json"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/serve"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// bpeCorpus is text with multi-byte characters that a small vocabulary
// leaves split across tokens.
func bpeCorpus() string {
	var b strings.Builder
	for i := range 300 {
		switch i % 3 {
		case 0:
			b.WriteString("the cat sat on the mat. 世界は広い, ünïcödé wörds: ")
		case 1:
			b.WriteString("a dog's bone lies under the old tree; héllo wörld! ")
		default:
			b.WriteString("we said: 世界, 世界 and the cat again.\n")
		}
	}
	return b.String()
}

// TestCLITokenizerRun trains a byte-level BPE tokenizer and a small lm
// through it, exports the run and checks that the model reads and writes
// text through the tokenizer: Load, Encode/Decode, generate, a streamed
// completion whose tokens split characters, and eval, whose bits per
// byte equal those of Score on the same text.
func TestCLITokenizerRun(t *testing.T) {
	dir := t.TempDir()
	corpus := bpeCorpus()
	os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte(corpus), 0o644)
	if r := cli(t, dir, "tokenizer", "train", "--data", "corpus.txt", "--vocab-size", "300", "--special", "<|endoftext|>", "--out", "tok/tokenizer.json"); r.code != 1 || !strings.Contains(r.stderr, "no such file or directory") {
		t.Errorf("train into a missing directory: exit %d, %q", r.code, r.stderr)
	}
	os.Mkdir(filepath.Join(dir, "tok"), 0o755)
	if r := cli(t, dir, "tokenizer", "train", "--data", "corpus.txt", "--vocab-size", "300", "--special", "<|endoftext|>", "--out", "tok/tokenizer.json"); r.code != 0 {
		t.Fatalf("tokenizer train: exit %d, %s", r.code, r.stderr)
	}
	r := cli(t, dir, "tokenizer", "inspect", "--tokenizer", "tok/tokenizer.json", "--text", "corpus.txt", "--json")
	var in struct {
		VocabSize     int     `json:"vocab_size"`
		Merges        int     `json:"merges"`
		Pattern       string  `json:"pattern"`
		BytesPerToken float64 `json:"bytes_per_token"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || in.VocabSize != 300 || in.Merges != 43 || in.Pattern != "cl100k" || in.BytesPerToken < 2 {
		t.Errorf("inspect: %+v, %v, %s", in, err, r.stderr)
	}
	// encode and decode are each other's inverse, line by line.
	lines := []string{"héllo wörld", "世界", "", "a\tb\n"}
	var jsonl strings.Builder
	for _, l := range lines {
		b, _ := json.Marshal(map[string]string{"text": l})
		jsonl.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(jsonl.String()), 0o644)
	r = cli(t, dir, "tokenizer", "encode", "--tokenizer", "tok/tokenizer.json", "--input", "in.jsonl")
	os.WriteFile(filepath.Join(dir, "ids.jsonl"), []byte(r.stdout), 0o644)
	r = cli(t, dir, "tokenizer", "decode", "--tokenizer", "tok/tokenizer.json", "--input", "ids.jsonl")
	var got []string
	for _, o := range jsonLines[struct{ Text string }](t, r.stdout) {
		got = append(got, o.Text)
	}
	if !slices.Equal(got, lines) {
		t.Errorf("decode(encode(lines)) = %q, want %q", got, lines)
	}

	cfg := `{"vocab_size": 300, "d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64, "max_len": 64,
		"causal": true, "task": "lm", "tokenizer": "tok/tokenizer.json", "mixer": {"kind": "full"},
		"train": {"batch_size": 8, "seq_len": 48, "steps": 60, "lr": 0.01, "eval_every": 30, "checkpoint_every": 30, "seed": 3}}`
	os.WriteFile(filepath.Join(dir, "lm.json"), []byte(cfg), 0o644)
	if r := cli(t, dir, "train", "--config", "lm.json", "--data", "corpus.txt", "--out", "run"); r.code != 0 || !strings.Contains(r.stderr, "validation tokens") {
		t.Fatalf("train: exit %d\n%s", r.code, r.stderr)
	}
	runCfg, _ := os.ReadFile(filepath.Join(dir, "run", "config.json"))
	if !strings.Contains(string(runCfg), `"tokenizer": "tokenizer.json"`) {
		t.Errorf("the run's config.json does not name its copy: %s", runCfg)
	}
	// pattern reads --text through the config's tokenizer: one row per
	// token, so a text of more bytes than max_len fits.
	long := strings.Repeat("the cat sat on the mat. ", 4)
	if r := cli(t, dir, "pattern", "--config", "lm.json", "--weights", filepath.Join("run", "ckpt", "00000060", "weights.safetensors"),
		"--text", long, "--out", "p.png"); r.code != 0 || len(long) <= 64 {
		t.Errorf("pattern --text through the tokenizer: exit %d, %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "export", "--run", "run", "--out", "model"); r.code != 0 {
		t.Fatalf("export: exit %d, %s", r.code, r.stderr)
	}
	for _, d := range []string{"run", "model"} {
		tk, err := tokenizer.Open(filepath.Join(dir, d, "tokenizer.json"), 0)
		if err != nil || tk.VocabSize() != 300 {
			t.Fatalf("%s/tokenizer.json: %v", d, err)
		}
	}
	m, err := tokenmix.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokenizer() == nil || m.Tokenizer().Pattern() != tokenizer.CL100K {
		t.Fatalf("Tokenizer() = %v", m.Tokenizer())
	}
	text := "the cat sat on the mat. 世界は広い"
	ids := m.Encode(text)
	if len(ids) >= len(text) {
		t.Errorf("Encode gave %d ids for %d bytes", len(ids), len(text))
	}
	if s, err := m.Decode(ids); err != nil || s != text {
		t.Errorf("Decode(Encode(text)) = %q, %v", s, err)
	}
	if _, err := m.Decode([]int32{5, 300}); err == nil || !strings.Contains(err.Error(), "ids[1] = 300") {
		t.Errorf("Decode of an id outside the vocabulary: %v", err)
	}

	// generate prints the bytes of the tokens Generate draws.
	res, err := m.Generate(stdctx.Background(), m.Encode("the cat sat on the mat. "), tokenmix.GenerateOptions{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Decode(res.Tokens)
	if r := cli(t, dir, "generate", "--run", "model", "--prompt", "the cat sat on the mat. ", "--temperature", "0", "--max-tokens", "12"); r.code != 0 || r.stdout != want+"\n" {
		t.Errorf("generate: exit %d, %q, want %q\n%s", r.code, r.stdout, want+"\n", r.stderr)
	}

	// A streamed completion: every event's text is whole characters, and
	// together they are the completion's text, though its tokens split
	// characters.
	split := false
	for _, id := range res.Tokens {
		if s, _ := m.Decode([]int32{id}); !utf8.ValidString(s) {
			split = true
		}
	}
	if !split {
		t.Fatalf("the completion %q has no token that splits a character; the test needs one", want)
	}
	s, err := serve.New(serve.Config{}, map[string]*tokenmix.Model{"bpe": m})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer s.Shutdown(stdctx.Background())
	if resp, err := hs.Client().Get(hs.URL + "/v1/models"); err != nil {
		t.Fatal(err)
	} else {
		var ms struct{ Data []struct{ Tokenizer string } }
		json.NewDecoder(resp.Body).Decode(&ms)
		resp.Body.Close()
		if len(ms.Data) != 1 || ms.Data[0].Tokenizer != "cl100k" {
			t.Errorf("/v1/models: %+v", ms)
		}
	}
	resp, err := hs.Client().Post(hs.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model": "bpe", "prompt": "the cat sat on the mat. ", "max_tokens": 12, "temperature": 0, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	events := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Text string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		for _, c := range ev.Choices {
			if !utf8.ValidString(c.Text) {
				t.Errorf("event text %q is not whole characters", c.Text)
			}
			streamed.WriteString(c.Text)
		}
		events++
	}
	resp.Body.Close()
	// The completion's bytes, each byte of an incomplete or invalid
	// sequence (a character cut by max_tokens) as U+FFFD.
	var valid strings.Builder
	for rest := want; rest != ""; {
		r, n := utf8.DecodeRuneInString(rest)
		if r == utf8.RuneError && n == 1 {
			valid.WriteRune(utf8.RuneError)
		} else {
			valid.WriteString(rest[:n])
		}
		rest = rest[n:]
	}
	if streamed.String() != valid.String() || events < 2 {
		t.Errorf("streamed %q in %d events, want %q", streamed.String(), events, valid.String())
	}

	// A tiktoken rank file with its pattern: the run keeps it as a
	// tokenizer.json, with the same ids.
	gz, err := os.Open(filepath.Join("..", "..", "tokenizer", "testdata", "gpt2.tiktoken.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	ranks, _ := io.ReadAll(zr)
	gz.Close()
	os.WriteFile(filepath.Join(dir, "gpt2.tiktoken"), ranks, 0o644)
	gcfg := strings.NewReplacer(`"vocab_size": 300`, `"vocab_size": 50257`, `"tok/tokenizer.json"`, `"gpt2.tiktoken", "tokenizer_pattern": "gpt2"`,
		`"steps": 60`, `"steps": 2`).Replace(cfg)
	os.WriteFile(filepath.Join(dir, "gpt2.json"), []byte(gcfg), 0o644)
	if r := cli(t, dir, "train", "--config", "gpt2.json", "--data", "corpus.txt", "--out", "run2"); r.code != 0 {
		t.Fatalf("train with a rank file: exit %d\n%s", r.code, r.stderr)
	}
	ref, err := tokenizer.Open(filepath.Join(dir, "gpt2.tiktoken"), tokenizer.GPT2)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := tokenmix.Load(filepath.Join(dir, "run2"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m2.Tokenizer().Encode(corpus[:2000]), ref.Encode(corpus[:2000]); !slices.Equal(got, want) {
		t.Errorf("the run's tokenizer.json encodes differently from the rank file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run2", "config.json")); strings.Contains(string(b), "tokenizer_pattern") {
		t.Errorf("the run's config keeps tokenizer_pattern: %s", b)
	}
	bad := strings.Replace(gcfg, `"vocab_size": 50257`, `"vocab_size": 50000`, 1)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(bad), 0o644)
	if r := cli(t, dir, "train", "--config", "bad.json", "--data", "corpus.txt", "--out", "run3"); r.code != 1 || !strings.Contains(r.stderr, "50256 ids, above vocab_size 50000") {
		t.Errorf("a tokenizer above vocab_size: exit %d, %q", r.code, r.stderr)
	}

	// eval's bits per byte on a text shorter than a window equal Score's.
	short := "the cat sat on the mat. 世界は広い, héllo wörld!"
	os.WriteFile(filepath.Join(dir, "short.txt"), []byte(short), 0o644)
	r = cli(t, dir, "eval", "--run", "model", "--data", "short.txt", "--json")
	var ev struct {
		Inputs, Tokens, Windows int
		BitsPerByte             float64 `json:"bits_per_byte"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); r.code != 0 || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	sids := m.Encode(short)
	sc2, err := m.Score(stdctx.Background(), [][]int32{sids})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := m.Decode(sids[:1])
	if ev.Windows != 1 || ev.Tokens != len(sids)-1 || ev.Inputs != len(short)-len(first) ||
		math.Abs(ev.BitsPerByte-sc2[0].BitsPerByte) > 1e-5 || sc2[0].BitsPerByte >= sc2[0].BitsPerToken {
		t.Errorf("eval %+v; Score: %d tokens, %.6f bits per byte, %.6f per token", ev, len(sids), sc2[0].BitsPerByte, sc2[0].BitsPerToken)
	}
}
