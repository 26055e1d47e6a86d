package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// small returns a small trained tokenizer and its tokenizer.json.
func small(t testing.TB) (*Tokenizer, []byte) {
	docs := []string{"the cat sat on the mat", "the dog's bone", "1234 + 5678 = 6912\n\tdone"}
	tk, err := Train(docs, TrainOptions{VocabSize: 280, Pattern: CL100K, Special: []string{"<|end|>"}})
	if err != nil {
		t.Fatal(err)
	}
	return tk, jsonBytes(t, tk)
}

// edit decodes a tokenizer.json, applies f and encodes it again.
func edit(t *testing.T, js []byte, f func(m map[string]any)) []byte {
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func model(m map[string]any) map[string]any { return m["model"].(map[string]any) }

// TestParseErrors checks that each damaged or unsupported tokenizer file
// is an error naming the field.
func TestParseErrors(t *testing.T) {
	_, js := small(t)
	firstToken := func(m map[string]any) string {
		for k, v := range model(m)["vocab"].(map[string]any) {
			if v.(float64) == 0 {
				return k
			}
		}
		t.Fatal("no id 0")
		return ""
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"not JSON", []byte("{"), "tokenizer.json"},
		{"no model", edit(t, js, func(m map[string]any) { delete(m, "model") }), "model: missing"},
		{"missing merges", edit(t, js, func(m map[string]any) { delete(model(m), "merges") }), "model.merges: missing"},
		{"merges not a list", edit(t, js, func(m map[string]any) { model(m)["merges"] = "x y" }), "model.merges: want a list"},
		{"merge of one token", edit(t, js, func(m map[string]any) { model(m)["merges"] = []any{"t"} }), "model.merges[0]: want two tokens"},
		{"merge of an unknown token", edit(t, js, func(m map[string]any) { model(m)["merges"] = []any{"t zzzz"} }), `model.merges[0]: "zzzz" is not in the vocabulary`},
		{"merge whose result is missing", edit(t, js, func(m map[string]any) { model(m)["merges"] = []any{[]any{"q", "q"}} }), `merges[0]: "q" + "q" is not in the vocabulary`},
		{"repeated merge", edit(t, js, func(m map[string]any) {
			ms := model(m)["merges"].([]any)
			model(m)["merges"] = append(ms, ms[0])
		}), "is a repeated merge"},
		{"id out of range", edit(t, js, func(m map[string]any) { model(m)["vocab"].(map[string]any)["zz"] = -1 }), `model.vocab["zz"]: id -1 out of range`},
		{"huge id", edit(t, js, func(m map[string]any) { model(m)["vocab"].(map[string]any)["zz"] = 1 << 30 }), "id 1073741824 out of range"},
		{"fractional id", edit(t, js, func(m map[string]any) { model(m)["vocab"].(map[string]any)["zz"] = 1.5 }), "not an integer id"},
		{"two tokens, one id", edit(t, js, func(m map[string]any) { model(m)["vocab"].(map[string]any)["zz"] = 0 }), "is already the id of"},
		{"token twice", bytes.Replace(js, []byte(`"vocab": {`), []byte(`"vocab": {"a": 500, `), 1), `model.vocab["a"]: the token appears twice`},
		{"token outside the byte alphabet", edit(t, js, func(m map[string]any) { model(m)["vocab"].(map[string]any)["a b"] = 400 }), "not a token of the byte-level alphabet"},
		{"missing byte", edit(t, js, func(m map[string]any) {
			v := model(m)["vocab"].(map[string]any)
			delete(v, firstToken(m))
			model(m)["merges"] = []any{}
		}), "no token for the byte 0x00"},
		{"WordPiece", edit(t, js, func(m map[string]any) { model(m)["type"] = "WordPiece" }), `model.type: "WordPiece" is not supported`},
		{"unk token", edit(t, js, func(m map[string]any) { model(m)["unk_token"] = "<unk>" }), "model.unk_token"},
		{"byte fallback", edit(t, js, func(m map[string]any) { model(m)["byte_fallback"] = true }), "model.byte_fallback"},
		{"dropout", edit(t, js, func(m map[string]any) { model(m)["dropout"] = 0.1 }), "model.dropout"},
		{"subword prefix", edit(t, js, func(m map[string]any) { model(m)["continuing_subword_prefix"] = "##" }), "model.continuing_subword_prefix"},
		{"normalizer", edit(t, js, func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFC"} }), `normalizer: "NFC" is not supported`},
		{"no pre-tokenizer", edit(t, js, func(m map[string]any) { m["pre_tokenizer"] = nil }), "pre_tokenizer: missing"},
		{"whitespace pre-tokenizer", edit(t, js, func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }), `pre_tokenizer.type: "Whitespace" is not supported`},
		{"unknown regex", edit(t, js, func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\w+`}
		}), "pre_tokenizer.pretokenizers[0].pattern: the regex"},
		{"prefix space", edit(t, js, func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		}), "pre_tokenizer.add_prefix_space"},
		{"template post-processor", edit(t, js, func(m map[string]any) { m["post_processor"] = map[string]any{"type": "TemplateProcessing"} }), `post_processor: "TemplateProcessing" is not supported`},
		{"wordpiece decoder", edit(t, js, func(m map[string]any) { m["decoder"] = map[string]any{"type": "WordPiece"} }), "decoder:"},
		{"added token id", edit(t, js, func(m map[string]any) { m["added_tokens"].([]any)[0].(map[string]any)["id"] = -3 }), "added_tokens[0].id: -3 out of range"},
		{"added token content", edit(t, js, func(m map[string]any) { m["added_tokens"].([]any)[0].(map[string]any)["content"] = "" }), "added_tokens[0].content: empty"},
		{"added token on a vocabulary token", edit(t, js, func(m map[string]any) { m["added_tokens"].([]any)[0].(map[string]any)["id"] = 5 }), "added_tokens[0]: id 5 is the vocabulary's"},
	} {
		_, err := Parse(c.file, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

// TestParseTiktokenErrors covers the rank-file reader's errors.
func TestParseTiktokenErrors(t *testing.T) {
	var good strings.Builder
	for b := 0; b < 256; b++ {
		good.WriteString(b64([]byte{byte(b)}) + " " + itoa(b) + "\n")
	}
	for _, c := range []struct {
		name, file string
		p          Pattern
		want       string
	}{
		{"no pattern", good.String(), 0, "carries no pattern"},
		{"bad base64", good.String() + "!!! 256\n", GPT2, `line 257: token "!!!" is not base64`},
		{"bad rank", good.String() + b64([]byte("ab")) + " x\n", GPT2, `line 257: rank "x"`},
		{"three fields", good.String() + "YQ== 1 2\n", GPT2, "line 257: want"},
		{"rank twice", good.String() + b64([]byte("ab")) + " 3\n", GPT2, "line 257: rank 3 is already the rank of line 4"},
		{"token twice", good.String() + b64([]byte("a")) + " 300\n", GPT2, "have the same bytes"},
		{"missing byte", strings.Join(strings.SplitN(good.String(), "\n", 2)[1:], ""), GPT2, "no token for the byte 0x00"},
	} {
		_, err := Parse([]byte(c.file), c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	tk, err := Parse([]byte(good.String()+b64([]byte("ab"))+" 256\n"), GPT2)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("abc ab"); !slices.Equal(got, []int{256, 'c', ' ', 256}) {
		t.Errorf("Encode = %v", got)
	}
	if _, err := tk.Decode([]int{256, 300}); err == nil || !strings.Contains(err.Error(), "ids[1]: 300 is not a token id") {
		t.Errorf("Decode of an unknown id: %v", err)
	}
}

// FuzzParse feeds arbitrary files to the loader: it returns an error or
// a tokenizer whose encoding round-trips and whose tokenizer.json reads
// back to the same ids.
func FuzzParse(f *testing.F) {
	_, js := small(f)
	f.Add(js)
	var rank strings.Builder
	for b := 0; b < 256; b++ {
		rank.WriteString(b64([]byte{byte(b)}) + " " + itoa(b) + "\n")
	}
	rank.WriteString(b64([]byte("ab")) + " 256\n")
	f.Add([]byte(rank.String()))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}}`))
	const text = "Hello, wörld! 12345 'tis\n\t  x 世界 🙂"
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := Parse(b, CL100K)
		if err != nil {
			return
		}
		ids := tk.Encode(text)
		if s, err := tk.Decode(ids); err != nil || s != text {
			t.Fatalf("Decode(Encode(text)) = %q, %v", s, err)
		}
		back, err := ParseJSON(jsonBytes(t, tk))
		if err != nil {
			t.Fatalf("its tokenizer.json does not read back: %v", err)
		}
		if got := back.Encode(text); !slices.Equal(got, ids) && tk.merges != nil && !tk.wholeFirst {
			t.Fatalf("ids through tokenizer.json %v, want %v", got, ids)
		}
	})
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func itoa(i int) string   { return strconv.Itoa(i) }

// TestLongPieces checks that a piece above longPiece, merged through the
// heap, gets the ids of the quadratic merge, and that a long run of
// letters encodes in about linear time (a megabyte, not hours).
func TestLongPieces(t *testing.T) {
	ref := reference(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"gpt2", "cl100k"} {
		tk := ref[name]
		for k := range 200 {
			n := longPiece + 1 + rng.IntN(600)
			b := make([]byte, n)
			alpha := "abcdefghijklmnopqrstuvwxyz"[:1+k%26]
			for i := range b {
				b[i] = alpha[rng.IntN(len(alpha))]
			}
			if k%7 == 0 {
				for i := range b {
					b[i] = 'a'
				}
			}
			piece := string(b)
			got := tk.appendLongPiece(nil, piece)
			want := quadratic(tk, piece)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %q: heap %v, quadratic %v", name, piece, got, want)
			}
		}
		long := strings.Repeat("abcdefghij", 100000)
		if s, err := tk.Decode(tk.Encode(long)); err != nil || s != long {
			t.Fatalf("%s: a megabyte of letters does not round-trip", name)
		}
	}
}

// quadratic is appendPiece's scan without the heap, for any length.
func quadratic(t *Tokenizer, piece string) []int {
	parts := make([]int32, len(piece))
	for i := range piece {
		parts[i] = t.byteID[piece[i]]
	}
	for len(parts) > 1 {
		best, rank := -1, int32(1<<31-1)
		for i := 0; i+1 < len(parts); i++ {
			if m, ok := t.pairs[pairKey(parts[i], parts[i+1])]; ok && m.rank < rank {
				best, rank = i, m.rank
			}
		}
		if best < 0 {
			break
		}
		parts[best] = t.pairs[pairKey(parts[best], parts[best+1])].id
		parts = append(parts[:best+1], parts[best+2:]...)
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = int(p)
	}
	return out
}
