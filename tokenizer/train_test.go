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

var update = flag.Bool("update", false, "rewrite the trained golden tokenizers in testdata")

// trainDocs returns the pinned training corpus of the trained golden
// tokenizers: the non-test .go files of Go's strings, bytes and bufio
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

// The trained golden tokenizers: 1,024 ids on trainDocs, one per pattern
// scripts/tokenizer_golden.mjs checks against the Hugging Face reference,
// with the reference's ids on 2,000 fuzzed strings and net/http's files.
var trainedGolden = []struct {
	pattern   Pattern
	file, ids string
}{
	{CL100K, "trained_go.json", "golden_trained.jsonl.gz"},
	{Blocks, "trained_go_blocks.json", "golden_trained_blocks.jsonl.gz"},
}

func trainGolden(t testing.TB, p Pattern) *Tokenizer {
	tk, err := Train(trainDocs(t), TrainOptions{VocabSize: 1024, Pattern: p, Special: []string{"<|endoftext|>"}})
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

// TestTrainGolden trains the pinned tokenizers and compares their
// tokenizer.json files with the committed ones, which
// scripts/tokenizer_golden.mjs encodes with the Hugging Face reference.
func TestTrainGolden(t *testing.T) {
	for _, g := range trainedGolden {
		got := jsonBytes(t, trainGolden(t, g.pattern))
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the trained tokenizer differs from %s (go test -run TrainGolden -update rewrites it; then %s)", path, regenerate)
		}
		if again := jsonBytes(t, trainGolden(t, g.pattern)); !bytes.Equal(again, got) {
			t.Fatalf("%v: training twice gave two tokenizers", g.pattern)
		}
	}
}

// TestTrainedReference checks the committed trained tokenizers' ids
// against those the Hugging Face reference (transformers.js) gives for the
// same tokenizer.json files, on the fuzzed strings and Go files.
func TestTrainedReference(t *testing.T) {
	for _, g := range trainedGolden {
		tk, err := Open(filepath.Join("testdata", g.file), 0)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Pattern() != g.pattern {
			t.Fatalf("%s: pattern %v, want %v", g.file, tk.Pattern(), g.pattern)
		}
		type row struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		n := goldenRows(t, g.ids, 0, func(r row) {
			if got := tk.Encode(r.Text); !slices.Equal(got, r.IDs) {
				t.Errorf("%v: ids of %q:\n got %v\nwant %v", g.pattern, clip(r.Text), got, r.IDs)
			}
		})
		if n < 1000 {
			t.Fatalf("%s: %d reference rows: %s", g.ids, n, regenerate)
		}
	}
}

// TestTrain checks a trained tokenizer: every id decodes, text
// round-trips, the vocabulary has the size asked for, the special token
// has the last id, and the tokenizer.json reads back to the same ids and
// bytes.
func TestTrain(t *testing.T) {
	docs := trainDocs(t)
	for _, p := range []Pattern{GPT2, CL100K, O200K, Blocks} {
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
		{TrainOptions{VocabSize: 300, MaxBytes: 5}, "max bytes 5: every document is longer"},
	} {
		if _, err := Train(docs, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.opt, err, c.want)
		}
	}
	if _, err := Train(nil, TrainOptions{VocabSize: 300}); err == nil || !strings.Contains(err.Error(), "no documents") {
		t.Errorf("no documents: err %v", err)
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

// TestTrainMatchesNaive checks Train's incremental pair counts against a
// trainer that recounts every pair before each merge, on text with runs
// of one byte ("aaaa": overlapping pairs) and repeated pairs ("abab").
func TestTrainMatchesNaive(t *testing.T) {
	docs := []string{
		strings.Repeat("aaaa abab aaaaa\n", 7) + "\n\n" + strings.Repeat("\t\tx := ababab\n", 5),
		"bbbb\n\n\n\naaaa bbb aaaaaaa\n\nabababa\n", "\xff\xff\xfeé\n\n",
	}
	docs = append(docs, trainDocs(t)[0][:4000])
	for _, p := range []Pattern{GPT2, CL100K, O200K, Blocks} {
		tk, err := Train(docs, TrainOptions{VocabSize: 420, Pattern: p})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tk.merges, naiveMerges(docs, p, 420-256); !slices.Equal(got, want) {
			t.Errorf("%v: %d merges differ from the naive trainer's %d", p, len(got), len(want))
		}
	}
}

// naiveMerges is BPE training written plainly: count every pair of every
// piece, merge the most frequent (equal counts: smaller ids), repeat
// until the vocabulary has 256+n tokens.
func naiveMerges(docs []string, p Pattern, n int) [][2]int32 {
	counts := map[string]int64{}
	for _, d := range docs {
		p.Pieces(d, func(s string) bool { counts[s]++; return true })
	}
	var words [][]int32
	var ns []int64
	for s, c := range counts {
		w := make([]int32, len(s))
		for i := range len(s) {
			w[i] = int32(s[i])
		}
		words, ns = append(words, w), append(ns, c)
	}
	tokens := map[string]int32{}
	strs := make([]string, 256)
	for b := range strs {
		strs[b] = string([]byte{byte(b)})
		tokens[strs[b]] = int32(b)
	}
	var merges [][2]int32
	for len(strs) < 256+n {
		pairs := map[[2]int32]int64{}
		for i, w := range words {
			for j := 0; j+1 < len(w); j++ {
				pairs[[2]int32{w[j], w[j+1]}] += ns[i]
			}
		}
		var best [2]int32
		var bc int64
		for k, c := range pairs {
			if c > bc || c == bc && (k[0] < best[0] || k[0] == best[0] && k[1] < best[1]) {
				best, bc = k, c
			}
		}
		if bc == 0 {
			break
		}
		s := strs[best[0]] + strs[best[1]]
		id, ok := tokens[s]
		if !ok {
			id = int32(len(strs))
			strs = append(strs, s)
			tokens[s] = id
		}
		merges = append(merges, best)
		for i, w := range words {
			out := w[:0]
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == best[0] && w[j+1] == best[1] {
					out = append(out, id)
					j++
				} else {
					out = append(out, w[j])
				}
			}
			words[i] = out
		}
	}
	return merges
}
