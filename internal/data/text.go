package data

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// TextCorpus is a byte-level language-modelling corpus for `tokenmix
// train`: the bytes of one text file, or of every regular file under a
// directory (in path order, each followed by '\n'), split into a training
// head and a validation tail. Tokens are bytes (vocabulary 256).
type TextCorpus struct {
	Train, Val []byte
}

// LoadText reads path (a file or a directory tree) and keeps the last
// valFrac of the bytes for validation. LoadText returns an error if path
// holds no bytes or either split is too short for a window of minLen+1
// bytes.
func LoadText(path string, valFrac float64, minLen int) (*TextCorpus, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var all []byte
	if st.IsDir() {
		var files []string
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
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
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			all = append(append(all, b...), '\n')
		}
	} else if all, err = os.ReadFile(path); err != nil {
		return nil, err
	}
	if !(valFrac > 0 && valFrac < 1) {
		return nil, fmt.Errorf("data: validation fraction %v not in (0,1)", valFrac)
	}
	nv := int(float64(len(all)) * valFrac)
	c := &TextCorpus{Train: all[:len(all)-nv], Val: all[len(all)-nv:]}
	if len(c.Train) <= minLen || len(c.Val) <= minLen {
		return nil, fmt.Errorf("data: %s: %d bytes is too little for windows of %d bytes in both splits", path, len(all), minLen+1)
	}
	return c, nil
}

// TextBatch fills tokens and targets [B,T] with B windows of text drawn
// uniformly by rng: tokens are bytes i..i+T−1 and targets bytes i+1..i+T.
// TextBatch panics if len(text) ≤ T or a slice is shorter than B·T.
func TextBatch(tokens, targets []int32, text []byte, B, T int, rng *rand.Rand) {
	if len(text) <= T {
		panic("data: text shorter than a window")
	}
	for b := 0; b < B; b++ {
		i := rng.IntN(len(text) - T)
		for t := 0; t < T; t++ {
			tokens[b*T+t] = int32(text[i+t])
			targets[b*T+t] = int32(text[i+t+1])
		}
	}
}
