package data

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/tokenmix/tokenmix/tokenizer"
)

// GoSrcConfig selects the Go source tree and the split sizes.
type GoSrcConfig struct {
	// Root is the directory to read, normally $(go env GOROOT)/src; empty
	// means that directory (see GoRootSrc).
	Root string `json:"root"`
	// SeqLen is the window length T (256 when 0).
	SeqLen int `json:"seq_len"`
	// ValPercent and TestPercent are the shares of package directories in
	// the validation and test splits (5 each when 0).
	ValPercent  int `json:"val_percent"`
	TestPercent int `json:"test_percent"`
	// MaxTrain, MaxVal and MaxTest cap each split's bytes (0 = no cap); the
	// first bytes of the split are kept, in file order.
	MaxTrain int `json:"max_train_bytes"`
	MaxVal   int `json:"max_val_bytes"`
	MaxTest  int `json:"max_test_bytes"`
	// EvalContext is how many bytes of context every scored byte of the
	// validation and test splits has at least (default 0): their windows step
	// by SeqLen−EvalContext and score only their last SeqLen−EvalContext
	// targets, the first window all of its targets. Each byte is still
	// scored exactly once. Must be below SeqLen. Training windows do not
	// overlap whatever its value.
	EvalContext int `json:"eval_context"`
	// Order is the order of the files in a split ("path"): "path" sorts
	// their paths as strings, which can put a subdirectory's files between
	// a package's own (a/b.go, a/c/d.go, a/z.go); "package" sorts by
	// package directory (component by component, so a package's
	// subpackages follow it), then file name, so each package's files are
	// contiguous and a long window holds whole files of one package.
	// "path" is the default because it reproduces the splits of the
	// committed results.
	Order string `json:"order"`
	// Tokenizer, when set, names a tokenizer file (a tokenizer.json, or a
	// tiktoken rank file with TokenizerPattern), relative to the current
	// directory: the splits are then its ids, vocab its size, and bits
	// per byte count each scored token's bytes. SeqLen, EvalContext and
	// the byte caps keep their units (tokens, tokens, bytes).
	Tokenizer        string `json:"tokenizer"`
	TokenizerPattern string `json:"tokenizer_pattern"`
}

// GoSrc file orders (GoSrcConfig.Order).
const (
	GoSrcPathOrder    = "path"
	GoSrcPackageOrder = "package"
)

// GoSrc is byte-level language modelling on Go source: the non-test .go
// files under Root (skipping testdata directories), each assigned to a
// split by a stable hash (FNV-1a) of its package directory relative to Root,
// so a package — and so a file — is never in two splits. A split is its
// files' bytes concatenated in Order (path order, or package by package),
// cut into fixed windows of SeqLen tokens (Windows), so every byte but the
// split's first is predicted exactly once. With EvalContext c > 0 the
// validation and test windows slide instead, so a scored byte always has at
// least c bytes before it (outside the split's first window): a
// window-start byte otherwise is predicted from nothing, which a compressor
// such as gzip never has to do. Package order with c = SeqLen/2 is the
// long-context shape: a window holds whole files of a package and their
// shared identifiers, and every scored byte sees half a window.
type GoSrc struct {
	cfg     GoSrcConfig
	bytes   [3][]byte
	files   [3][]string // relative paths, per split
	win     [3]*Windows // fixed training windows; validation and test with EvalContext
	tok     *tokenizer.Tokenizer
	tokLens []int // tok.TokenLens()
}

// GoRootSrc returns $(go env GOROOT)/src: GOROOT from the environment, else
// from `go env GOROOT`, else the GOROOT this binary was built with.
func GoRootSrc() (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		}
	}
	if root == "" {
		root = runtime.GOROOT() //nolint:staticcheck // last resort only
	}
	if root == "" {
		return "", errors.New("cannot find GOROOT (install Go or pass --data-dir)")
	}
	return filepath.Join(root, "src"), nil
}

// GoSrcSplit returns the split of package directory dir (slash-separated,
// relative to the root) for the given percentages.
func GoSrcSplit(dir string, valPercent, testPercent int) Split {
	h := fnv.New64a()
	h.Write([]byte(filepath.ToSlash(dir)))
	b := int(h.Sum64() % 100)
	switch {
	case b < testPercent:
		return Test
	case b < testPercent+valPercent:
		return Val
	}
	return Train
}

// NewGoSrc reads the Go source tree. Its errors are KeyErrors: about root
// if the tree has no .go files or a split comes out empty, about the
// offending key for a value out of range.
func NewGoSrc(c GoSrcConfig) (*GoSrc, error) {
	if c.SeqLen == 0 {
		c.SeqLen = 256
	}
	if c.ValPercent == 0 {
		c.ValPercent = 5
	}
	if c.TestPercent == 0 {
		c.TestPercent = 5
	}
	if c.Order == "" {
		c.Order = GoSrcPathOrder
	}
	switch {
	case c.SeqLen < 1:
		return nil, keyErr("gosrc", "seq_len", "want ≥ 1, got %d", c.SeqLen)
	case c.ValPercent < 0:
		return nil, keyErr("gosrc", "val_percent", "want ≥ 0, got %d", c.ValPercent)
	case c.TestPercent < 0:
		return nil, keyErr("gosrc", "test_percent", "want ≥ 0, got %d", c.TestPercent)
	case c.ValPercent+c.TestPercent >= 100:
		return nil, keyErr("gosrc", "test_percent", "want val_percent + test_percent < 100, got %d + %d", c.ValPercent, c.TestPercent)
	case c.MaxTrain < 0:
		return nil, keyErr("gosrc", "max_train_bytes", "want ≥ 0, got %d", c.MaxTrain)
	case c.MaxVal < 0:
		return nil, keyErr("gosrc", "max_val_bytes", "want ≥ 0, got %d", c.MaxVal)
	case c.MaxTest < 0:
		return nil, keyErr("gosrc", "max_test_bytes", "want ≥ 0, got %d", c.MaxTest)
	case c.EvalContext < 0 || c.EvalContext >= c.SeqLen:
		return nil, keyErr("gosrc", "eval_context", "want in [0, seq_len (%d)), got %d", c.SeqLen, c.EvalContext)
	case c.Order != GoSrcPathOrder && c.Order != GoSrcPackageOrder:
		return nil, keyErr("gosrc", "order", "want %q or %q, got %q", GoSrcPathOrder, GoSrcPackageOrder, c.Order)
	}
	if c.Root == "" {
		r, err := GoRootSrc()
		if err != nil {
			return nil, &KeyError{Prefix: "gosrc", Key: "root", Err: err}
		}
		c.Root = r
	}
	paths, err := goFiles(c.Root)
	if err != nil {
		return nil, keyErr("gosrc", "root", "%v", err)
	}
	if c.Order == GoSrcPackageOrder {
		sortByPackage(paths)
	}
	g := &GoSrc{cfg: c}
	if c.Tokenizer != "" {
		var p tokenizer.Pattern
		if c.TokenizerPattern != "" {
			var err error
			if p, err = tokenizer.ParsePattern(c.TokenizerPattern); err != nil {
				return nil, keyErr("gosrc", "tokenizer_pattern", "%v", err)
			}
		}
		tk, err := tokenizer.Open(c.Tokenizer, p)
		if err != nil {
			return nil, keyErr("gosrc", "tokenizer", "%v", err)
		}
		g.tok, g.tokLens = tk, tk.TokenLens()
	} else if c.TokenizerPattern != "" {
		return nil, keyErr("gosrc", "tokenizer_pattern", "set without tokenizer")
	}
	caps := [3]int{c.MaxTrain, c.MaxVal, c.MaxTest}
	for _, p := range paths {
		rel, _ := filepath.Rel(c.Root, p)
		s := GoSrcSplit(filepath.Dir(rel), c.ValPercent, c.TestPercent)
		if caps[s] > 0 && len(g.bytes[s]) >= caps[s] {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, keyErr("gosrc", "root", "%v", err)
		}
		g.bytes[s] = append(g.bytes[s], b...)
		g.files[s] = append(g.files[s], filepath.ToSlash(rel))
	}
	for s := range 3 {
		if caps[s] > 0 && len(g.bytes[s]) > caps[s] {
			g.bytes[s] = g.bytes[s][:caps[s]]
		}
		if len(g.bytes[s]) < 2 {
			return nil, keyErr("gosrc", "root", "the %s split of %s is empty", Split(s), c.Root)
		}
		ctx := c.EvalContext
		if Split(s) == Train {
			ctx = 0
		}
		text := BytesText(g.bytes[s])
		if g.tok != nil {
			ids := g.tok.Encode(string(g.bytes[s]))
			text = IDText(make([]int32, len(ids)))
			for i, id := range ids {
				text.ids[i] = int32(id)
			}
		}
		if g.win[s], err = NewWindows(text, c.SeqLen, ctx); err != nil {
			return nil, keyErr("gosrc", "seq_len", "%v", err)
		}
	}
	return g, nil
}

// goFiles returns the non-test .go files under root, sorted, skipping
// testdata and directories whose names start with "." or "_"; none is an
// error.
func goFiles(root string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .go files under %s", root)
	}
	sort.Strings(paths)
	return paths, nil
}

// sortByPackage sorts file paths by directory, compared component by
// component, then by file name: each directory's files come together,
// followed by its subdirectories'.
func sortByPackage(paths []string) {
	slices.SortStableFunc(paths, func(a, b string) int {
		da, db := strings.Split(filepath.ToSlash(filepath.Dir(a)), "/"), strings.Split(filepath.ToSlash(filepath.Dir(b)), "/")
		if c := slices.Compare(da, db); c != 0 {
			return c
		}
		return strings.Compare(filepath.Base(a), filepath.Base(b))
	})
}

// Info implements Task.
func (g *GoSrc) Info() Info {
	info := Info{Name: "gosrc", Mode: LM, Vocab: 256, Chance: 8, PadID: -1, MaxLen: g.cfg.SeqLen,
		Causal: true, Metric: BitsPerByte}
	if g.tok != nil {
		info.Vocab, info.Tokenizer, info.TokenBytes = g.tok.VocabSize(), g.tok, g.tokLens
	}
	return info
}

// Config returns the resolved configuration.
func (g *GoSrc) Config() GoSrcConfig { return g.cfg }

// Bytes returns split s's bytes (not a copy: do not modify).
func (g *GoSrc) Bytes(s Split) []byte { return g.bytes[s] }

// Files returns the relative paths of split s's files, in order.
func (g *GoSrc) Files(s Split) []string { return g.files[s] }

// Len implements Task.
func (g *GoSrc) Len(s Split) int { return g.win[s].Len() }

// ExampleLen implements Task.
func (g *GoSrc) ExampleLen(s Split, i int) int { return g.win[s].ExampleLen(i) }

// Example implements Task. In an overlapping window (i > 0, EvalContext >
// 0) the targets before the window's last SeqLen−EvalContext positions are
// −1.
func (g *GoSrc) Example(tokens, targets []int32, s Split, i int) {
	g.win[s].Example(tokens, targets, i)
}

// Baseline is a reference point printed next to the mixers: a compressor's
// result on gosrc's test bytes, or a lookup-table classifier's accuracy on
// ListOps' test split.
type Baseline struct {
	Name string `json:"name"` // e.g. "gzip -9"
	// BitsPerByte is 8·compressed/original, or 0 with Err set (compressors).
	BitsPerByte float64 `json:"bits_per_byte,omitempty"`
	Bytes       int     `json:"bytes,omitempty"`
	Compressed  int     `json:"compressed_bytes,omitempty"`
	// Accuracy is a classifier's test accuracy in [0,1] (ListOps).
	Accuracy float64 `json:"accuracy,omitempty"`
	// Note says what the reference is.
	Note string `json:"note,omitempty"`
	Err  string `json:"error,omitempty"`
}

// IsClassifier reports whether b is a classifier's Accuracy rather than a
// compressor's BitsPerByte: a compressor always covers some Bytes.
func (b Baseline) IsClassifier() bool { return b.Bytes == 0 }

// Compress runs the external command name with args as a filter (stdin to
// stdout) on data and reports its bits per byte. When the command is not
// installed, Err says so and BitsPerByte is 0.
func Compress(name string, args []string, data []byte) Baseline {
	b := Baseline{Name: strings.Join(append([]string{name}, args...), " "), Bytes: len(data)}
	path, err := exec.LookPath(name)
	if err != nil {
		b.Err = fmt.Sprintf("%s not installed", name)
		return b
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin = bytes.NewReader(data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		b.Err = fmt.Sprintf("%s: %v %s", name, err, strings.TrimSpace(stderr.String()))
		return b
	}
	b.Compressed = out.Len()
	if len(data) > 0 {
		b.BitsPerByte = 8 * float64(out.Len()) / float64(len(data))
	}
	return b
}

// Baselines returns gzip -9 and xz -9e on the bytes that the test split's
// targets cover (all but the first byte), the same bytes the model's bits
// per byte is measured on.
func (g *GoSrc) Baselines() []Baseline {
	t := g.bytes[Test][1:]
	return []Baseline{
		Compress("gzip", []string{"-9", "-c", "-n"}, t),
		Compress("xz", []string{"-9e", "-c"}, t),
	}
}
