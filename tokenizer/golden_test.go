package tokenizer

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The golden files come from scripts/tokenizer_golden.mjs (js-tiktoken);
// its header gives the command that regenerates them.
const regenerate = "regenerate with the command in scripts/tokenizer_golden.mjs"

var (
	refOnce sync.Once
	refTok  map[string]*Tokenizer
	refErr  error
)

// reference returns the GPT-2 and cl100k_base tokenizers read from the
// committed rank files.
func reference(t testing.TB) map[string]*Tokenizer {
	refOnce.Do(func() {
		refTok = map[string]*Tokenizer{}
		for name, f := range map[string]struct {
			file string
			p    Pattern
		}{"gpt2": {"gpt2.tiktoken.gz", GPT2}, "cl100k": {"cl100k_base.tiktoken.gz", CL100K}} {
			r, err := gzOpen(filepath.Join("testdata", f.file))
			if err != nil {
				refErr = err
				return
			}
			tk, err := ReadTiktoken(r, f.p, nil)
			r.Close()
			if err != nil {
				refErr = err
				return
			}
			refTok[name] = tk
		}
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refTok
}

type gzFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzFile) Close() error { g.Reader.Close(); return g.f.Close() }

func gzOpen(path string) (gzFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return gzFile{}, err
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return gzFile{}, err
	}
	return gzFile{z, f}, nil
}

// goldenRows decodes each line of the gzipped JSONL golden file name into
// a fresh T and calls fn with it, up to limit lines (0: all); it returns
// the number of lines.
func goldenRows[T any](t testing.TB, name string, limit int, fn func(T)) int {
	t.Helper()
	r, err := gzOpen(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	n := 0
	for (limit == 0 || n < limit) && sc.Scan() {
		var row T
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s line %d: %v", name, n+1, err)
		}
		fn(row)
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func pieceLens(p Pattern, s string) []int {
	var out []int
	p.Pieces(s, func(x string) bool { out = append(out, len(x)); return true })
	return out
}

type fuzzRow struct {
	Text   string           `json:"text"`
	Pieces map[string][]int `json:"pieces"`
	IDs    map[string][]int `json:"ids"`
}

// TestGoldenFuzz checks the pieces of every pattern and the ids of GPT-2
// and cl100k_base on 10,000 seeded strings against js-tiktoken's.
func TestGoldenFuzz(t *testing.T) {
	ref := reference(t)
	bad := 0
	n := goldenRows(t, "golden_fuzz.jsonl.gz", 0, func(row fuzzRow) {
		for name, want := range row.Pieces {
			p, err := ParsePattern(name)
			if err != nil {
				t.Fatal(err)
			}
			if got := pieceLens(p, row.Text); !slices.Equal(got, want) {
				bad++
				if bad <= 10 {
					t.Errorf("%s pieces of %q:\n got %v\nwant %v", name, row.Text, got, want)
				}
			}
		}
		for name, want := range row.IDs {
			got := ref[name].Encode(row.Text)
			if !slices.Equal(got, want) {
				bad++
				if bad <= 10 {
					t.Errorf("%s ids of %q:\n got %v\nwant %v", name, row.Text, got, want)
				}
			}
			if s, err := ref[name].Decode(got); err != nil || s != row.Text {
				t.Errorf("%s: Decode(Encode(%q)) = %q, %v", name, row.Text, s, err)
			}
		}
	})
	if n != 10000 {
		t.Fatalf("%d fuzzed strings, want 10000: %s", n, regenerate)
	}
	if bad > 0 {
		t.Fatalf("%d of %d strings differ from the reference", bad, n)
	}
}

type fileRow struct {
	Root   string `json:"root"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	GPT2   hashed `json:"gpt2"`
	CL100K hashed `json:"cl100k"`
	O200K  hashed `json:"o200k_pieces"`
}

type hashed struct {
	N      int    `json:"n"`
	SHA256 string `json:"sha256"`
}

func hashInts(xs []int) hashed {
	h := sha256.New()
	var b []byte
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
		if len(b) > 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	return hashed{len(xs), hex.EncodeToString(h.Sum(nil))}
}

// TestGoldenFiles checks the ids of GPT-2 and cl100k_base and o200k's
// pieces on the Go standard library's sources and this repository's docs
// against js-tiktoken's, and that every file round-trips. A file whose
// text changed since the golden file was made is skipped and counted; Go's
// sources must match the golden file's Go release. -short checks every
// 20th file.
func TestGoldenFiles(t *testing.T) {
	ref := reference(t)
	var rows []fileRow
	goldenRows(t, "golden_files.jsonl.gz", 0, func(row fileRow) { rows = append(rows, row) })
	goSrc := filepath.Join(runtime.GOROOT(), "src")
	type result struct {
		checked, stale, missing int
		errs                    []string
	}
	var (
		mu  sync.Mutex
		res = map[string]*result{"go": {}, "repo": {}}
	)
	work := make(chan fileRow)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for row := range work {
				path := filepath.Join(goSrc, row.File)
				if row.Root == "repo" {
					path = filepath.Join("..", row.File)
				}
				b, err := os.ReadFile(path)
				var errs []string
				status := "checked"
				switch {
				case err != nil:
					status = "missing"
				case hex.EncodeToString(sha(b)) != row.SHA256:
					status = "stale"
				default:
					text := string(b)
					for _, c := range []struct {
						name string
						want hashed
					}{{"gpt2", row.GPT2}, {"cl100k", row.CL100K}} {
						ids := ref[c.name].Encode(text)
						if got := hashInts(ids); got != c.want {
							errs = append(errs, c.name+" "+row.File+": "+strconv.Itoa(got.N)+" ids, want "+strconv.Itoa(c.want.N)+" (or their hash differs)")
						}
						if s, err := ref[c.name].Decode(ids); err != nil || s != text {
							errs = append(errs, c.name+" "+row.File+": Decode(Encode(text)) differs")
						}
					}
					if got := hashInts(pieceLens(O200K, text)); got != row.O200K {
						errs = append(errs, "o200k pieces "+row.File+": "+strconv.Itoa(got.N)+", want "+strconv.Itoa(row.O200K.N))
					}
				}
				mu.Lock()
				r := res[row.Root]
				switch status {
				case "checked":
					r.checked++
				case "stale":
					r.stale++
				default:
					r.missing++
				}
				r.errs = append(r.errs, errs...)
				mu.Unlock()
			}
		}()
	}
	for i, row := range rows {
		if testing.Short() && i%20 != 0 {
			continue
		}
		work <- row
	}
	close(work)
	wg.Wait()
	for _, root := range []string{"go", "repo"} {
		r := res[root]
		t.Logf("%s: %d files checked, %d changed since the golden file, %d missing", root, r.checked, r.stale, r.missing)
		for _, e := range r.errs {
			t.Error(e)
		}
	}
	if g := res["go"]; g.stale+g.missing > 0 {
		t.Errorf("Go's sources (%s) are not those of the golden file: %s", goSrc, regenerate)
	}
	if res["go"].checked == 0 {
		t.Fatal("no file checked")
	}
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// TestWhereReferencesDiffer checks the characters on which JavaScript's
// regular expressions, and so the golden files, differ from tiktoken's
// Rust patterns, which tokenmix follows: U+0085 is white space, U+FEFF is
// not, and "'ſ" is a contraction for the case-insensitive patterns.
func TestWhereReferencesDiffer(t *testing.T) {
	for _, c := range []struct {
		p    Pattern
		text string
		want []string
	}{
		{GPT2, "a\u0085b", []string{"a", "\u0085", "b"}},
		{GPT2, "a \u0085\u0085b", []string{"a", " \u0085", "\u0085", "b"}},
		{GPT2, "a\ufeffb", []string{"a", "\ufeff", "b"}},
		{CL100K, "x\u0085\ny", []string{"x", "\u0085\n", "y"}},
		{CL100K, "\ufeffword", []string{"\ufeffword"}},
		{CL100K, "it'ſ", []string{"it", "'ſ"}},
		{GPT2, "it'ſ", []string{"it", "'", "ſ"}},
		{O200K, "it'ſ", []string{"it'ſ"}},
		{O200K, "IT'S", []string{"IT'S"}},
	} {
		var got []string
		c.p.Pieces(c.text, func(s string) bool { got = append(got, s); return true })
		if !slices.Equal(got, c.want) {
			t.Errorf("%v %q: got %q, want %q", c.p, c.text, got, c.want)
		}
	}
}

// TestInvalidUTF8 checks that bytes that are not UTF-8 encode and decode
// back, each a character of their own.
func TestInvalidUTF8(t *testing.T) {
	ref := reference(t)
	for _, s := range []string{"\xff", "a\xffb", "\xe2\x82", "héllo\x80 wörld\xc3", strings.Repeat("\xfe", 100)} {
		for name, tk := range ref {
			got, err := tk.Decode(tk.Encode(s))
			if err != nil || got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q, %v", name, s, got, err)
			}
		}
	}
}

// TestBlocksPieces checks the Blocks scanner against its regular
// expression, which has no lookahead, so Go's regexp runs it as written:
// on edge cases, the fuzzed strings and Go's bufio, bytes and strings.
func TestBlocksPieces(t *testing.T) {
	re := regexp.MustCompile(Blocks.Regex())
	texts := []string{"", "\n", "\n\n", "x", "a\nb", "a\nb\n", "a\n\nb", "a\n\n\n\nb\n\n",
		"\n\nx\n", " \n \n", "a\r\n\r\nb", "\xff\n\n\xfe", "func f() {\n\treturn\n}\n\nfunc g() {}\n"}
	goldenRows(t, "golden_fuzz.jsonl.gz", 2000, func(r fuzzRow) { texts = append(texts, r.Text) })
	texts = append(texts, trainDocs(t)...)
	for _, s := range texts {
		var want []int
		for _, m := range re.FindAllStringIndex(s, -1) {
			if m[1] > m[0] { // the regex matches "" at the end of "" only
				want = append(want, m[1]-m[0])
			}
		}
		if got := pieceLens(Blocks, s); !slices.Equal(got, want) {
			t.Errorf("blocks pieces of %q:\n got %v\nwant %v", clip(s), got, want)
		}
	}
}
