package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadText(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("0123456789"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("abcdefghij"), 0o644)
	c, err := LoadText(dir, 0.25, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Files in path order ("b.txt" < "sub/a.txt"), each followed by '\n':
	// 22 bytes, the last 5 for validation.
	if got := string(c.Train) + "|" + string(c.Val); got != "0123456789\nabcdef|ghij\n" {
		t.Errorf("splits %q", got)
	}
	if _, err := LoadText(filepath.Join(dir, "b.txt"), 0.5, 5); err == nil || !strings.Contains(err.Error(), "too little") {
		t.Errorf("short file: %v", err)
	}
	if _, err := LoadText(filepath.Join(dir, "none"), 0.5, 1); err == nil {
		t.Error("missing path: want error")
	}
}

func TestTextBatch(t *testing.T) {
	text := []byte("hello, world")
	tok, tgt := make([]int32, 3*4), make([]int32, 3*4)
	TextBatch(tok, tgt, text, 3, 4, rand.New(rand.NewPCG(1, 1)))
	for b := 0; b < 3; b++ {
		w := make([]byte, 5)
		for i := 0; i < 4; i++ {
			w[i] = byte(tok[b*4+i])
			if i > 0 && tgt[b*4+i-1] != tok[b*4+i] {
				t.Errorf("row %d: targets %v are not tokens %v shifted", b, tgt[b*4:b*4+4], tok[b*4:b*4+4])
			}
		}
		w[4] = byte(tgt[b*4+3])
		if !strings.Contains(string(text), string(w)) {
			t.Errorf("row %d: window %q is not in the text", b, w)
		}
	}
}
