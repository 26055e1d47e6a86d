package run

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// TokenizerName is the tokenizer's file in a run directory and an export,
// a Hugging Face tokenizer.json.
const TokenizerName = "tokenizer.json"

// OpenTokenizer reads the tokenizer that config c names (its "tokenizer"
// key, relative to dir, the directory of the config file), or returns nil
// when c names none. It checks that the tokenizer's ids fit vocab_size.
func OpenTokenizer(dir string, c *model.Config) (*tokenizer.Tokenizer, error) {
	if c.Tokenizer == "" {
		return nil, nil
	}
	path := c.Tokenizer
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	var p tokenizer.Pattern
	if c.TokenizerPattern != "" {
		var err error
		if p, err = tokenizer.ParsePattern(c.TokenizerPattern); err != nil {
			return nil, fmt.Errorf("tokenizer_pattern: %w", err)
		}
	}
	tk, err := tokenizer.Open(path, p)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if tk.VocabSize() > c.VocabSize {
		return nil, fmt.Errorf("tokenizer: %s has %d ids, above vocab_size %d", path, tk.VocabSize(), c.VocabSize)
	}
	return tk, nil
}

// WriteTokenizer writes tk as dir's tokenizer.json, synced.
func WriteTokenizer(dir string, tk *tokenizer.Tokenizer) error {
	var b bytes.Buffer
	if err := tk.WriteJSON(&b); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(dir, TokenizerName), b.Bytes()); err != nil {
		return err
	}
	return syncDir(dir)
}
