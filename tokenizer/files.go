package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxID bounds the ids a file may give; idLimit bounds them by the number
// of tokens, so that a damaged file cannot make the loader allocate far
// beyond its size.
const maxID = 1 << 24

// idLimit is the bound on ids for a file of n tokens: ids may leave holes,
// but fewer than n + 1024 of them.
func idLimit(n int) int { return min(2*n+1024, maxID) }

// Open reads a tokenizer file: a Hugging Face tokenizer.json, or a
// tiktoken rank file (one "base64-token rank" per line). A rank file
// carries no pattern, so p names it; for a tokenizer.json p must be 0 or
// the file's own pattern.
func Open(path string, p Pattern) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads a tokenizer file's bytes as Open does.
func Parse(b []byte, p Pattern) (*Tokenizer, error) {
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		t, err := ParseJSON(b)
		if err != nil {
			return nil, err
		}
		if p != 0 && p != t.pattern {
			return nil, fmt.Errorf("the tokenizer.json's pattern is %v, not %v", t.pattern, p)
		}
		return t, nil
	}
	if p == 0 {
		return nil, fmt.Errorf("a tiktoken rank file carries no pattern: give one (%s)", PatternNames)
	}
	return ReadTiktoken(bytes.NewReader(b), p, nil)
}

// ReadTiktoken reads a tiktoken rank file: one "base64-token rank" line per
// token, the rank its id. Every token merges by its rank (tiktoken's
// rule). special adds special tokens, which the file does not list.
func ReadTiktoken(r io.Reader, p Pattern, special []Special) (*Tokenizer, error) {
	if _, ok := patternNames[p]; !ok {
		return nil, fmt.Errorf("invalid pattern %d", int(p))
	}
	type entry struct {
		rank int
		tok  string
	}
	var entries []entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := map[int]int{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"base64-token rank\", got %q", line, clip(text))
		}
		tok, err := base64.StdEncoding.DecodeString(f[0])
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("line %d: token %q is not base64 of one or more bytes", line, clip(f[0]))
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil || rank < 0 || rank >= maxID {
			return nil, fmt.Errorf("line %d: rank %q is not an integer in [0, %d)", line, clip(f[1]), maxID)
		}
		if prev, dup := seen[rank]; dup {
			return nil, fmt.Errorf("line %d: rank %d is already the rank of line %d", line, rank, prev)
		}
		seen[rank] = line
		entries = append(entries, entry{rank, string(tok)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	limit := idLimit(len(entries) + len(special))
	tokens := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.rank >= limit {
			return nil, fmt.Errorf("line %d: rank %d out of range [0, %d) for a file of %d tokens", seen[e.rank], e.rank, limit, len(entries))
		}
		for len(tokens) <= e.rank {
			tokens = append(tokens, "")
		}
		tokens[e.rank] = e.tok
	}
	tokens, err := addSpecials(tokens, special)
	if err != nil {
		return nil, err
	}
	return newTokenizer(p, tokens, nil, special, true)
}

// addSpecials places the special tokens' contents at their ids.
func addSpecials(tokens []string, special []Special) ([]string, error) {
	limit := idLimit(len(tokens) + len(special))
	for _, s := range special {
		if s.ID < 0 || s.ID >= limit {
			return nil, fmt.Errorf("special token %q: id %d out of range [0, %d)", clip(s.Content), s.ID, limit)
		}
		if s.Content == "" {
			return nil, fmt.Errorf("special token %d: empty content", s.ID)
		}
		for len(tokens) <= s.ID {
			tokens = append(tokens, "")
		}
		if tokens[s.ID] != "" && tokens[s.ID] != s.Content {
			return nil, fmt.Errorf("special token %q: id %d is already the token %q", s.Content, s.ID, tokens[s.ID])
		}
		tokens[s.ID] = s.Content
	}
	return tokens, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// byte-level alphabet: GPT-2's map of the 256 bytes to printable
// characters, which tokenizer.json files use to spell tokens.
var (
	byteChar [256]rune
	charByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteChar[b] = rune(b)
		} else {
			byteChar[b] = rune(256 + n)
			n++
		}
		charByte[byteChar[b]] = byte(b)
	}
}

// toByteLevel spells bytes in the byte-level alphabet.
func toByteLevel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteChar[s[i]])
	}
	return b.String()
}

// fromByteLevel reads a byte-level spelling back into bytes.
func fromByteLevel(s string) (string, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := charByte[r]
		if !ok {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), true
}

// hfFile is the part of tokenizer.json that tokenmix reads.
type hfFile struct {
	AddedTokens   []hfAdded       `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

type hfAdded struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
}

type hfStep struct {
	Type           string          `json:"type"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Pattern        json.RawMessage `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	Pretokenizers  []hfStep        `json:"pretokenizers"`
}

func isNull(m json.RawMessage) bool {
	m = bytes.TrimSpace(m)
	return len(m) == 0 || string(m) == "null"
}

// ParseJSON reads a Hugging Face tokenizer.json of a byte-level BPE model:
// model.type "BPE" without unk_token, byte fallback, dropout or affixes;
// no normalizer; a ByteLevel pre-tokenizer (GPT-2's pattern), or a
// Sequence of a Split on the cl100k, o200k or blocks pattern and a ByteLevel
// without regex; a ByteLevel decoder and post-processor, or none. Any
// other file is an error naming the field that is not supported.
func ParseJSON(b []byte) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if isNull(f.Model) {
		return nil, fmt.Errorf("model: missing")
	}
	if !isNull(f.Normalizer) {
		return nil, fmt.Errorf("normalizer: %s is not supported (byte-level BPE has none)", typeOf(f.Normalizer))
	}
	p, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		raw  json.RawMessage
	}{{"decoder", f.Decoder}, {"post_processor", f.PostProcessor}} {
		if !isNull(s.raw) && typeOf(s.raw) != `"ByteLevel"` {
			return nil, fmt.Errorf("%s: %s is not supported (want ByteLevel or null)", s.name, typeOf(s.raw))
		}
	}
	var m hfModel
	if err := json.Unmarshal(f.Model, &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	switch {
	case m.Type != "BPE":
		return nil, fmt.Errorf("model.type: %q is not supported (want BPE)", m.Type)
	case m.UnkToken != nil:
		return nil, fmt.Errorf("model.unk_token: %q is not supported (byte-level BPE has no unknown token)", *m.UnkToken)
	case m.ByteFallback:
		return nil, fmt.Errorf("model.byte_fallback: true is not supported")
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("model.dropout: %v is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("model.continuing_subword_prefix: %q is not supported", *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("model.end_of_word_suffix: %q is not supported", *m.EndOfWordSuffix)
	}
	tokens, err := parseVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	byLevel := make(map[string]int32, len(tokens))
	for id, s := range tokens {
		if s != "" {
			byLevel[toByteLevel(s)] = int32(id)
		}
	}
	merges, err := parseMerges(m.Merges, byLevel)
	if err != nil {
		return nil, err
	}
	// Every added token is special: split out of the text before the
	// pre-tokenizer only where the caller allows it (EncodeSpecial).
	var special []Special
	for i, a := range f.AddedTokens {
		if limit := idLimit(len(tokens) + len(f.AddedTokens)); a.ID < 0 || a.ID >= limit {
			return nil, fmt.Errorf("added_tokens[%d].id: %d out of range [0, %d)", i, a.ID, limit)
		}
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d].content: empty", i)
		}
		if a.ID < len(tokens) && tokens[a.ID] != "" {
			if tok, _ := fromByteLevel(a.Content); tok != tokens[a.ID] && a.Content != tokens[a.ID] {
				return nil, fmt.Errorf("added_tokens[%d]: id %d is the vocabulary's %q, not %q", i, a.ID, clip(toByteLevel(tokens[a.ID])), clip(a.Content))
			}
			tokens[a.ID] = ""
		}
		special = append(special, Special{Content: a.Content, ID: a.ID})
	}
	tokens, err = addSpecials(tokens, special)
	if err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	t, err := newTokenizer(p, tokens, merges, special, m.IgnoreMerges)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return t, nil
}

func typeOf(raw json.RawMessage) string {
	var v struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Type == nil {
		return "an object without a type"
	}
	return string(v.Type)
}

func parsePreTokenizer(raw json.RawMessage) (Pattern, error) {
	if isNull(raw) {
		return 0, fmt.Errorf("pre_tokenizer: missing (want ByteLevel, or a Sequence of Split and ByteLevel)")
	}
	var s hfStep
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("pre_tokenizer: %w", err)
	}
	byteLevel := func(s hfStep, field string, regex bool) error {
		if s.Type != "ByteLevel" {
			return fmt.Errorf("%s.type: %q is not supported here (want ByteLevel)", field, s.Type)
		}
		if s.AddPrefixSpace {
			return fmt.Errorf("%s.add_prefix_space: true is not supported", field)
		}
		use := s.UseRegex == nil || *s.UseRegex
		if use != regex {
			return fmt.Errorf("%s.use_regex: %v is not supported here", field, use)
		}
		return nil
	}
	switch s.Type {
	case "ByteLevel":
		return GPT2, byteLevel(s, "pre_tokenizer", true)
	case "Sequence":
		if len(s.Pretokenizers) != 2 {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers: want a Split and a ByteLevel, got %d steps", len(s.Pretokenizers))
		}
		sp := s.Pretokenizers[0]
		if sp.Type != "Split" {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0].type: %q is not supported (want Split)", sp.Type)
		}
		var re struct {
			Regex *string `json:"Regex"`
		}
		if err := json.Unmarshal(sp.Pattern, &re); err != nil || re.Regex == nil {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0].pattern: want {\"Regex\": …}")
		}
		p, ok := patternOfRegex(*re.Regex)
		if !ok {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0].pattern: the regex %q is not one tokenmix scans (%s)", clip(*re.Regex), PatternNames)
		}
		if sp.Behavior != "Isolated" || sp.Invert {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0]: behavior %q, invert %v is not supported (want Isolated, false)", sp.Behavior, sp.Invert)
		}
		return p, byteLevel(s.Pretokenizers[1], "pre_tokenizer.pretokenizers[1]", false)
	}
	return 0, fmt.Errorf("pre_tokenizer.type: %q is not supported (want ByteLevel or Sequence)", s.Type)
}

// parseVocab reads model.vocab, an object from byte-level token to id, in
// file order so that a repeated token is seen; ids are unique and below
// idLimit, and the ids no token has are holes.
func parseVocab(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model.vocab: missing")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("model.vocab: want an object from token to id")
	}
	seen := map[string]bool{}
	var tokens []string
	var keys []string
	var ids []int
	for d.More() {
		kt, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("model.vocab: %w", err)
		}
		key := kt.(string)
		var n json.Number
		if err := d.Decode(&n); err != nil {
			return nil, fmt.Errorf("model.vocab[%q]: want an integer id", clip(key))
		}
		id, err := strconv.Atoi(string(n))
		if err != nil {
			return nil, fmt.Errorf("model.vocab[%q]: %s is not an integer id", clip(key), n)
		}
		if seen[key] {
			return nil, fmt.Errorf("model.vocab[%q]: the token appears twice", clip(key))
		}
		seen[key] = true
		keys, ids = append(keys, key), append(ids, id)
	}
	size, limit := 0, idLimit(len(keys))
	for i, key := range keys {
		if ids[i] < 0 || ids[i] >= limit {
			return nil, fmt.Errorf("model.vocab[%q]: id %d out of range [0, %d) for %d tokens", clip(key), ids[i], limit, len(keys))
		}
		size = max(size, ids[i]+1)
	}
	tokens = make([]string, size)
	filled := make([]bool, size)
	for i, key := range keys {
		id := ids[i]
		if filled[id] {
			return nil, fmt.Errorf("model.vocab[%q]: id %d is already the id of %q", clip(key), id, clip(toByteLevel(tokens[id])))
		}
		tok, ok := fromByteLevel(key)
		if !ok || tok == "" {
			return nil, fmt.Errorf("model.vocab[%q]: not a token of the byte-level alphabet", clip(key))
		}
		tokens[id], filled[id] = tok, true
	}
	return tokens, nil
}

// parseMerges reads model.merges: "left right" strings or [left, right]
// pairs, in rank order.
func parseMerges(raw json.RawMessage, ids map[string]int32) ([][2]int32, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model.merges: missing")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("model.merges: want a list")
	}
	out := make([][2]int32, len(list))
	for i, m := range list {
		var pair []string
		var s string
		if json.Unmarshal(m, &s) == nil {
			pair = strings.Split(s, " ")
		} else if json.Unmarshal(m, &pair) != nil {
			return nil, fmt.Errorf("model.merges[%d]: want \"left right\" or [left, right]", i)
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: want two tokens, got %d", i, len(pair))
		}
		for k, p := range pair {
			id, ok := ids[p]
			if !ok {
				return nil, fmt.Errorf("model.merges[%d]: %q is not in the vocabulary", i, clip(p))
			}
			out[i][k] = id
		}
	}
	return out, nil
}

// WriteJSON writes the tokenizer as a Hugging Face tokenizer.json that the
// Hugging Face libraries and ParseJSON read: the vocabulary by id, the
// merges in rank order, the special tokens as added tokens.
func (t *Tokenizer) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	q := func(s string) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		e.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	}
	fmt.Fprintf(bw, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, s := range t.special {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(bw, "%s\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}", sep, s.ID, q(s.Content))
	}
	if len(t.special) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"normalizer\": null,\n")
	if t.pattern == GPT2 {
		bw.WriteString(`  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},` + "\n")
	} else {
		fmt.Fprintf(bw, `  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": %s}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},`+"\n", q(t.pattern.Regex()))
	}
	bw.WriteString(`  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},` + "\n")
	bw.WriteString(`  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},` + "\n")
	fmt.Fprintf(bw, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": %v,\n    \"vocab\": {", t.wholeFirst)
	first := true
	for id, s := range t.tokens {
		if s == "" || t.isSpecial[int32(id)] {
			continue
		}
		if !first {
			bw.WriteString(",")
		}
		first = false
		fmt.Fprintf(bw, "\n      %s: %d", q(toByteLevel(s)), id)
	}
	bw.WriteString("\n    },\n    \"merges\": [")
	for i, m := range t.merges {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n      %s", q(toByteLevel(t.tokens[m[0]])+" "+toByteLevel(t.tokens[m[1]])))
	}
	bw.WriteString("\n    ]\n  }\n}\n")
	return bw.Flush()
}
