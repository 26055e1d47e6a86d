package data

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// Windows is byte-level text cut into language-modelling windows, the one
// windowing of text in tokenmix. A window of T tokens covers T+1 bytes:
// its tokens are the first T and its targets the byte after each. Three
// modes:
//
//   - random (Random): windows drawn uniformly, for training;
//   - fixed (context 0): window i starts at byte i·T, so the windows
//     overlap by the one byte that is the last target of one and the first
//     token of the next;
//   - sliding (context c > 0): window i starts at byte i·(T−c) and scores
//     only its last T−c targets (the others are −1, context), so a scored
//     byte has at least c bytes before it, as a compressor such as gzip
//     has.
//
// In both deterministic modes window 0 scores all its targets, the last
// window may be shorter, and every byte but the first is scored exactly
// once.
type Windows struct {
	text    Text
	t, ctx  int
	numWins int
}

// Text is language-modelling text as a model reads it: bytes (the
// byte-level vocabulary, ids 0–255) or the ids a tokenizer gave.
type Text struct {
	bytes []byte
	ids   []int32
}

// BytesText is byte-level text; b is not copied.
func BytesText(b []byte) Text { return Text{bytes: b} }

// IDText is tokenised text; ids is not copied.
func IDText(ids []int32) Text { return Text{ids: ids} }

// Len is the number of tokens.
func (x Text) Len() int {
	if x.ids != nil {
		return len(x.ids)
	}
	return len(x.bytes)
}

// At is token i.
func (x Text) At(i int) int32 {
	if x.ids != nil {
		return x.ids[i]
	}
	return int32(x.bytes[i])
}

// NewWindows returns the windows of T tokens over text with at least
// context tokens of context per scored token (0: fixed windows). It
// returns an error if T < 1, context is outside [0, T) or text has fewer
// than 2 tokens. text is not copied.
func NewWindows(text Text, T, context int) (*Windows, error) {
	if T < 1 {
		return nil, fmt.Errorf("data: window length %d < 1", T)
	}
	if context < 0 || context >= T {
		return nil, fmt.Errorf("data: context %d must lie in [0, window length %d)", context, T)
	}
	if text.Len() < 2 {
		return nil, fmt.Errorf("data: %d tokens of text; windows need at least 2", text.Len())
	}
	w := &Windows{text: text, t: T, ctx: context}
	n, S := text.Len()-1, T-context // n targets
	w.numWins = 1
	if n > T {
		w.numWins = 1 + (n-T+S-1)/S
	}
	return w, nil
}

// Len is the number of deterministic windows.
func (w *Windows) Len() int { return w.numWins }

// ExampleLen is the token count of window i.
func (w *Windows) ExampleLen(i int) int {
	return min(w.t, w.text.Len()-1-i*(w.t-w.ctx))
}

// Example writes window i's tokens and targets (−1 for the context of a
// sliding window after the first). It panics if i is out of range or a
// slice is shorter than ExampleLen(i).
func (w *Windows) Example(tokens, targets []int32, i int) {
	if i < 0 || i >= w.numWins {
		panic(fmt.Sprintf("data: window %d of %d", i, w.numWins))
	}
	n := w.ExampleLen(i)
	at := i * (w.t - w.ctx)
	first := 0 // first scored position
	if i > 0 {
		first = w.ctx
	}
	for j := range n {
		tokens[j] = w.text.At(at + j)
		targets[j] = w.text.At(at + j + 1)
		if j < first {
			targets[j] = -1
		}
	}
}

// Random fills tokens and targets [B,T] with B windows drawn uniformly by
// rng, each scoring all its targets: row b is bytes i..i+T−1 and its
// targets bytes i+1..i+T. Random panics if the text has T bytes or fewer
// or a slice is shorter than B·T.
func (w *Windows) Random(tokens, targets []int32, B int, rng *rand.Rand) {
	T := w.t
	if w.text.Len() <= T {
		panic("data: text shorter than a window")
	}
	for b := 0; b < B; b++ {
		i := rng.IntN(w.text.Len() - T)
		for t := 0; t < T; t++ {
			tokens[b*T+t] = w.text.At(i + t)
			targets[b*T+t] = w.text.At(i + t + 1)
		}
	}
}

// TextTask is language modelling (metric bits per byte) over the
// deterministic windows of up to three splits; a nil split has no
// examples. Its vocabulary is the 256 bytes unless WithTokens sets a
// tokenizer's.
type TextTask struct {
	name       string
	splits     [3]*Windows
	tokenBytes []int // nil: bytes
}

// NewTextTask returns the byte-level task name whose splits are train, val
// and test.
func NewTextTask(name string, train, val, test *Windows) *TextTask {
	return &TextTask{name: name, splits: [3]*Windows{train, val, test}}
}

// WithTokens makes the task's windows a tokenizer's ids: len(tokenBytes)
// ids, token id of tokenBytes[id] bytes (Info.TokenBytes). It returns t.
func (t *TextTask) WithTokens(tokenBytes []int) *TextTask {
	t.tokenBytes = tokenBytes
	return t
}

// Info implements Task.
func (t *TextTask) Info() Info {
	T := 0
	for _, w := range t.splits {
		if w != nil {
			T = max(T, w.t)
		}
	}
	vocab := 256
	if t.tokenBytes != nil {
		vocab = len(t.tokenBytes)
	}
	return Info{Name: t.name, Mode: LM, Vocab: vocab, PadID: -1, MaxLen: T, Causal: true, Metric: BitsPerByte, Chance: 8,
		TokenBytes: t.tokenBytes}
}

// Len implements Task.
func (t *TextTask) Len(s Split) int {
	if t.splits[s] == nil {
		return 0
	}
	return t.splits[s].Len()
}

// ExampleLen implements Task.
func (t *TextTask) ExampleLen(s Split, i int) int { return t.splits[s].ExampleLen(i) }

// Example implements Task.
func (t *TextTask) Example(tokens, targets []int32, s Split, i int) {
	t.splits[s].Example(tokens, targets, i)
}

// TextCorpus is a byte-level language-modelling corpus for `tokenmix
// train` and `tokenmix eval`: the bytes of a text file or directory (see
// ReadText), split into a training head and a validation tail. Tokens are
// bytes (vocabulary 256).
type TextCorpus struct {
	Train, Val []byte
}

// ReadText returns the bytes of path: a text file, or every regular file
// under a directory in path order, each followed by '\n'.
func ReadText(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return os.ReadFile(path)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(append(all, b...), '\n')
	}
	return all, nil
}

// SplitText keeps the last valFrac of text (rounded down to whole bytes)
// for validation. It returns an error unless 0 < valFrac < 1.
func SplitText(text []byte, valFrac float64) (*TextCorpus, error) {
	if !(valFrac > 0 && valFrac < 1) {
		return nil, fmt.Errorf("data: validation fraction %v not in (0,1)", valFrac)
	}
	nv := int(float64(len(text)) * valFrac)
	return &TextCorpus{Train: text[:len(text)-nv], Val: text[len(text)-nv:]}, nil
}

// LoadText reads path (ReadText) and keeps the last valFrac of the bytes
// for validation (SplitText). LoadText returns an error if path holds no
// bytes or either split is too short for a window of minLen+1 bytes.
func LoadText(path string, valFrac float64, minLen int) (*TextCorpus, error) {
	all, err := ReadText(path)
	if err != nil {
		return nil, err
	}
	c, err := SplitText(all, valFrac)
	if err != nil {
		return nil, err
	}
	if len(c.Train) <= minLen || len(c.Val) <= minLen {
		return nil, fmt.Errorf("data: %s: %d bytes is too little for windows of %d bytes in both splits", path, len(all), minLen+1)
	}
	return c, nil
}
