package data

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
)

// GoTagsConfig selects the Go source tree, the chunk length and the split
// sizes of the gotags task.
type GoTagsConfig struct {
	// Root is the directory to read, normally $(go env GOROOT)/src (empty:
	// that directory, GoRootSrc).
	Root string `json:"root"`
	// Len is the most bytes of a chunk (512 when 0): whole lines of a file,
	// a longer line cut.
	Len int `json:"len"`
	// ValPercent and TestPercent are the shares of package directories in
	// the validation and test splits (5 each when 0).
	ValPercent  int `json:"val_percent"`
	TestPercent int `json:"test_percent"`
	// MaxTrain, MaxVal and MaxTest cap each split's chunks (4000, 200 and
	// 400 when 0), the first in file order.
	MaxTrain int `json:"max_train"`
	MaxVal   int `json:"max_val"`
	MaxTest  int `json:"max_test"`
}

// GoTagLabels are the gotags task's span labels: what go/scanner calls
// comments, identifiers, keywords, numbers (integer, float and imaginary
// literals) and strings (string and rune literals).
var GoTagLabels = []string{"COMMENT", "IDENT", "KEYWORD", "NUMBER", "STRING"}

// GoTags is token tagging on Go source: the non-test .go files under Root
// (as GoSrc reads them, each package directory in one split by the same
// hash), cut into chunks of whole lines, each byte tagged (BIO over bytes)
// with the go/scanner token it belongs to. A bidirectional byte-level
// tagger learns it; span F1 on the test split's chunks is its measure.
type GoTags struct {
	cfg   GoTagsConfig
	info  Info
	text  [3][][]byte
	spans [3][][]Span
	tags  [3][][]int32
}

// NewGoTags reads and tags the Go source tree. Its errors are KeyErrors
// naming the key.
func NewGoTags(c GoTagsConfig) (*GoTags, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Len, 512)
	def(&c.ValPercent, 5)
	def(&c.TestPercent, 5)
	def(&c.MaxTrain, 4000)
	def(&c.MaxVal, 200)
	def(&c.MaxTest, 400)
	for _, kv := range []struct {
		k string
		v int
	}{{"len", c.Len}, {"val_percent", c.ValPercent}, {"test_percent", c.TestPercent}, {"max_train", c.MaxTrain}, {"max_val", c.MaxVal}, {"max_test", c.MaxTest}} {
		if kv.v < 1 {
			return nil, keyErr("gotags", kv.k, "want ≥ 1, got %d", kv.v)
		}
	}
	if c.Len < 16 {
		return nil, keyErr("gotags", "len", "want ≥ 16, got %d", c.Len)
	}
	if c.ValPercent+c.TestPercent >= 100 {
		return nil, keyErr("gotags", "test_percent", "want val_percent + test_percent < 100, got %d + %d", c.ValPercent, c.TestPercent)
	}
	if c.Root == "" {
		r, err := GoRootSrc()
		if err != nil {
			return nil, &KeyError{Prefix: "gotags", Key: "root", Err: err}
		}
		c.Root = r
	}
	paths, err := goFiles(c.Root)
	if err != nil {
		return nil, keyErr("gotags", "root", "%v", err)
	}
	g := &GoTags{cfg: c}
	caps := [3]int{c.MaxTrain, c.MaxVal, c.MaxTest}
	index := map[string]int32{}
	for i, t := range TagNames(GoTagLabels) {
		index[t] = int32(i)
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(c.Root, p)
		s := GoSrcSplit(filepath.Dir(rel), c.ValPercent, c.TestPercent)
		if len(g.text[s]) >= caps[s] {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, keyErr("gotags", "root", "%v", err)
		}
		spans := GoSpans(src)
		for _, ch := range chunks(src, c.Len) {
			if len(g.text[s]) >= caps[s] {
				break
			}
			cs := clipSpans(spans, ch[0], ch[1])
			text := src[ch[0]:ch[1]]
			rec := Record{Tokens: bytesToIDs(text), Text: true, Spans: cs, Where: rel}
			recs := []Record{rec}
			if err := TagTargets(recs, GoTagLabels, Offsets(nil)); err != nil {
				return nil, keyErr("gotags", "root", "%v", err)
			}
			g.text[s] = append(g.text[s], text)
			g.spans[s] = append(g.spans[s], cs)
			g.tags[s] = append(g.tags[s], recs[0].Targets)
		}
	}
	for s := range 3 {
		if len(g.text[s]) == 0 {
			return nil, keyErr("gotags", "root", "the %s split of %s is empty", Split(s), c.Root)
		}
	}
	g.info = Info{Name: "gotags", Mode: Tag, Vocab: 257, Classes: 1 + 2*len(GoTagLabels), PadID: 256, MaxLen: c.Len,
		Metric: Accuracy, LabelNames: TagNames(GoTagLabels)}
	return g, nil
}

// GoSpans returns the labelled spans of Go source src, as go/scanner
// scans it (GoTagLabels); a file that does not scan cleanly keeps the
// spans of the tokens it has.
func GoSpans(src []byte) []Span {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var sc scanner.Scanner
	sc.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	var out []Span
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		off := file.Offset(pos)
		var label string
		n := len(lit)
		switch {
		case tok == token.COMMENT:
			label = "COMMENT"
		case tok == token.IDENT:
			label = "IDENT"
		case tok.IsKeyword():
			label, n = "KEYWORD", len(tok.String())
		case tok == token.INT || tok == token.FLOAT || tok == token.IMAG:
			label = "NUMBER"
		case tok == token.STRING || tok == token.CHAR:
			label = "STRING"
		default:
			continue
		}
		if n == 0 || off+n > len(src) || !tok.IsKeyword() && !bytes.Equal(src[off:off+n], []byte(lit)) {
			continue // a comment or raw string whose carriage returns the scanner dropped
		}
		out = append(out, Span{Start: off, End: off + n, Label: label})
	}
	return out
}

// chunks cuts src into [start, end) ranges of whole lines of at most n
// bytes (a longer line is cut every n bytes), skipping blank ones.
func chunks(src []byte, n int) [][2]int {
	var out [][2]int
	start := 0
	for start < len(src) {
		end := start
		for end < len(src) {
			nl := bytes.IndexByte(src[end:], '\n')
			next := len(src)
			if nl >= 0 {
				next = end + nl + 1
			}
			if next-start > n {
				if end == start {
					end = start + n // one line longer than a chunk
				}
				break
			}
			end = next
		}
		if len(bytes.TrimSpace(src[start:end])) > 0 {
			out = append(out, [2]int{start, end})
		}
		start = end
	}
	return out
}

// clipSpans is spans within [lo, hi), clipped, with offsets from lo.
func clipSpans(spans []Span, lo, hi int) []Span {
	out := []Span{}
	for _, s := range spans {
		if s.End <= lo || s.Start >= hi {
			continue
		}
		out = append(out, Span{Start: max(s.Start, lo) - lo, End: min(s.End, hi) - lo, Label: s.Label})
	}
	return out
}

// Info implements Task.
func (g *GoTags) Info() Info { return g.info }

// Len implements Task.
func (g *GoTags) Len(s Split) int { return len(g.text[s]) }

// ExampleLen implements Task.
func (g *GoTags) ExampleLen(s Split, i int) int { return len(g.text[s][i]) }

// Example implements Task: the chunk's bytes and their tags.
func (g *GoTags) Example(tokens, targets []int32, s Split, i int) {
	for j, b := range g.text[s][i] {
		tokens[j] = int32(b)
	}
	copy(targets, g.tags[s][i])
}

// Text returns chunk i of split s, and Spans its labelled spans.
func (g *GoTags) Text(s Split, i int) []byte { return g.text[s][i] }

// Spans returns the labelled spans of chunk i of split s.
func (g *GoTags) Spans(s Split, i int) []Span { return g.spans[s][i] }
