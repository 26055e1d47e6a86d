package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// TestWindows: in every mode and length, each byte after the first is
// scored exactly once, by the window holding it at its position, with at
// least context bytes before it in that window (except in the first).
func TestWindows(t *testing.T) {
	text := []byte("the quick brown fox jumps over the lazy dog")
	for _, tc := range []struct{ n, T, context int }{
		{43, 8, 0}, {43, 8, 6}, {43, 8, 1}, {9, 8, 0}, {9, 8, 3}, {2, 8, 0}, {10, 1, 0}, {43, 43, 0}, {43, 5, 4},
	} {
		w, err := NewWindows(BytesText(text[:tc.n]), tc.T, tc.context)
		if err != nil {
			t.Fatal(err)
		}
		scored := make([]int, tc.n)
		tok, tgt := make([]int32, tc.T), make([]int32, tc.T)
		for i := range w.Len() {
			n := w.ExampleLen(i)
			if n < 1 || n > tc.T {
				t.Fatalf("%+v: window %d has %d tokens", tc, i, n)
			}
			w.Example(tok[:n], tgt[:n], i)
			lo := i * (tc.T - tc.context)
			for j := range n {
				if tok[j] != int32(text[lo+j]) {
					t.Fatalf("%+v: window %d token %d = %d, want byte %d", tc, i, j, tok[j], lo+j)
				}
				if tgt[j] < 0 {
					continue
				}
				if tgt[j] != int32(text[lo+j+1]) || (i > 0 && j < tc.context) {
					t.Fatalf("%+v: window %d scores position %d", tc, i, j)
				}
				scored[lo+j+1]++
			}
		}
		for p, k := range scored {
			if want := min(p, 1); k != want {
				t.Errorf("%+v: byte %d scored %d times, want %d", tc, p, k, want)
			}
		}
	}
	for _, tc := range []struct {
		n, T, context int
		err           string
	}{{43, 0, 0, "window length"}, {43, 8, 8, "context"}, {43, 8, -1, "context"}, {1, 8, 0, "at least 2"}} {
		if _, err := NewWindows(BytesText(text[:tc.n]), tc.T, tc.context); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: error %v, want %q", tc, err, tc.err)
		}
	}
}

// TestWindowsRandom: random windows are slices of the text, targets the
// tokens shifted by one, the same for the same seed.
func TestWindowsRandom(t *testing.T) {
	text := []byte("hello, world")
	w, err := NewWindows(BytesText(text), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, tgt := make([]int32, 3*4), make([]int32, 3*4)
	w.Random(tok, tgt, 3, rand.New(rand.NewPCG(1, 1)))
	for b := 0; b < 3; b++ {
		win := make([]byte, 5)
		for i := 0; i < 4; i++ {
			win[i] = byte(tok[b*4+i])
			if i > 0 && tgt[b*4+i-1] != tok[b*4+i] {
				t.Errorf("row %d: targets %v are not tokens %v shifted", b, tgt[b*4:b*4+4], tok[b*4:b*4+4])
			}
		}
		win[4] = byte(tgt[b*4+3])
		if !strings.Contains(string(text), string(win)) {
			t.Errorf("row %d: window %q is not in the text", b, win)
		}
	}
	tok2, tgt2 := make([]int32, 3*4), make([]int32, 3*4)
	w.Random(tok2, tgt2, 3, rand.New(rand.NewPCG(1, 1)))
	if !slices.Equal(tok, tok2) || !slices.Equal(tgt, tgt2) {
		t.Error("same seed, different windows")
	}
}

// TestTextTask: a TextTask's splits are its windows; a missing split is
// empty.
func TestTextTask(t *testing.T) {
	text := []byte("0123456789abcdefghij")
	val, _ := NewWindows(BytesText(text), 6, 2)
	task := NewTextTask("text", nil, val, nil)
	if info := task.Info(); info.MaxLen != 6 || info.Mode != LM || info.Metric != BitsPerByte || !info.Causal {
		t.Errorf("info %+v", info)
	}
	if task.Len(Train) != 0 || task.Len(Val) != val.Len() || task.Len(Test) != 0 {
		t.Errorf("lengths %d %d %d", task.Len(Train), task.Len(Val), task.Len(Test))
	}
	var b Batch
	Fill(&b, task, Val, []int{0, 1}, 0)
	if b.T != 6 || !slices.Equal(b.Lens, []int{6, 6}) || b.Targets[6] != -1 || b.Targets[8] != int32('7') {
		t.Errorf("batch %+v", b)
	}
}
