package tokenizer

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/trained_go.json")

// trainDocs returns the pinned training corpus of the trained golden
// tokenizer: the non-test .go files of Go's strings, bytes and bufio
// packages (the golden files' Go release).
func trainDocs(t testing.TB) []string {
	var docs []string
	for _, pkg := range []string{"bufio", "bytes", "strings"} {
		dir := filepath.Join(runtime.GOROOT(), "src", pkg)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				b, err := os.ReadFile(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(b))
			}
		}
	}
	return docs
}

func trainGolden(t testing.TB) *Tokenizer {
	tk, err := Train(trainDocs(t), TrainOptions{VocabSize: 1024, Pattern: CL100K, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func jsonBytes(t testing.TB, tk *Tokenizer) []byte {
	var b bytes.Buffer
	if err := tk.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTrainGolden trains the pinned tokenizer and compares its
// tokenizer.json with the committed one, which
// scripts/tokenizer_golden.mjs encodes with the Hugging Face reference.
func TestTrainGolden(t *testing.T) {
	got := jsonBytes(t, trainGolden(t))
	if *update {
		if err := os.WriteFile("testdata/trained_go.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/trained_go.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the trained tokenizer differs from testdata/trained_go.json (go test -run TrainGolden -update rewrites it; then %s)", regenerate)
	}
	if again := jsonBytes(t, trainGolden(t)); !bytes.Equal(again, got) {
		t.Fatal("training twice gave two tokenizers")
	}
}

// TestTrainedReference checks the committed trained tokenizer's ids
// against those the Hugging Face reference (transformers.js) gives for the
// same tokenizer.json, on the fuzzed strings and Go files.
func TestTrainedReference(t *testing.T) {
	tk, err := Open("testdata/trained_go.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	}
	n := goldenRows(t, "golden_trained.jsonl.gz", 0, func(r row) {
		if got := tk.Encode(r.Text); !slices.Equal(got, r.IDs) {
			t.Errorf("ids of %q:\n got %v\nwant %v", clip(r.Text), got, r.IDs)
		}
	})
	if n < 1000 {
		t.Fatalf("%d reference rows: %s", n, regenerate)
	}
}

// TestTrain checks a trained tokenizer: every id decodes, text
// round-trips, the vocabulary has the size asked for, the special token
// has the last id, and the tokenizer.json reads back to the same ids and
// bytes.
func TestTrain(t *testing.T) {
	docs := trainDocs(t)
	for _, p := range []Pattern{GPT2, CL100K, O200K} {
		tk, err := Train(docs, TrainOptions{VocabSize: 600, Pattern: p, Special: []string{"<|endoftext|>", "<pad>"}})
		if err != nil {
			t.Fatal(err)
		}
		if tk.VocabSize() != 600 || tk.NumMerges() != 600-256-2 {
			t.Errorf("%v: %d ids, %d merges", p, tk.VocabSize(), tk.NumMerges())
		}
		if sp := tk.Specials(); len(sp) != 2 || sp[1] != (Special{"<pad>", 599}) {
			t.Errorf("%v: specials %v", p, sp)
		}
		text := strings.Join(docs, "")
		ids := tk.Encode(text)
		if r := float64(len(text)) / float64(len(ids)); r < 2 {
			t.Errorf("%v: %.2f bytes per token on the training text", p, r)
		}
		if s, err := tk.Decode(ids); err != nil || s != text {
			t.Errorf("%v: Decode(Encode(text)) differs: %v", p, err)
		}
		js := jsonBytes(t, tk)
		back, err := ParseJSON(js)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.Encode(text), ids) || !bytes.Equal(jsonBytes(t, back), js) {
			t.Errorf("%v: the tokenizer.json does not read back the same", p)
		}
		if got := tk.EncodeSpecial("a<pad>b<|endoftext|>"); got[len(got)-1] != 598 || !slices.Contains(got, 599) {
			t.Errorf("%v: EncodeSpecial = %v", p, got)
		}
	}
}

// TestTrainOptions checks the errors of bad options and the seeded sample.
func TestTrainOptions(t *testing.T) {
	docs := []string{"aaaa bbbb", "cccc dddd", "eeee ffff", "gggg hhhh"}
	for _, c := range []struct {
		opt  TrainOptions
		want string
	}{
		{TrainOptions{VocabSize: 100}, "below the 256 bytes"},
		{TrainOptions{VocabSize: 300, Special: []string{"x", "x"}}, `"x": given twice`},
		{TrainOptions{VocabSize: 300, Special: []string{""}}, "empty"},
		{TrainOptions{VocabSize: 300, Pattern: 9}, "invalid pattern"},
	} {
		if _, err := Train(docs, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.opt, err, c.want)
		}
	}
	a := sample(docs, 20, 1)
	b := sample(docs, 20, 1)
	c := sample(docs, 20, 2)
	if !slices.Equal(a, b) || len(a) != 2 {
		t.Errorf("sample(20, 1) = %q then %q", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 sampled the same documents %q", a)
	}
	if got := sample(docs, 1000, 1); !slices.Equal(got, docs) {
		t.Errorf("a cap above the text reordered it: %q", got)
	}
}

// TestTiktokenJSON converts the tiktoken vocabularies to tokenizer.json
// and back: the ids stay those of the reference on the fuzzed strings.
func TestTiktokenJSON(t *testing.T) {
	ref := reference(t)
	conv := map[string]*Tokenizer{}
	for name, tk := range ref {
		back, err := ParseJSON(jsonBytes(t, tk))
		if err != nil {
			t.Fatal(err)
		}
		conv[name] = back
	}
	goldenRows(t, "golden_fuzz.jsonl.gz", 3000, func(row fuzzRow) {
		for name, want := range row.IDs {
			if got := conv[name].Encode(row.Text); !slices.Equal(got, want) {
				t.Errorf("%s through tokenizer.json, %q:\n got %v\nwant %v", name, row.Text, got, want)
			}
		}
	})
}
