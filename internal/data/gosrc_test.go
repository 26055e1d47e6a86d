package data

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGoTree writes n package directories, each with two source files, a
// _test.go file and a testdata directory, under a temporary root.
func fakeGoTree(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("pkg%d", i/10), fmt.Sprintf("sub%d", i))
		os.MkdirAll(filepath.Join(dir, "testdata"), 0o755)
		for _, f := range []string{"a.go", "b.go"} {
			os.WriteFile(filepath.Join(dir, f), fmt.Appendf(nil, "package sub%d // %s\n", i, f), 0o644)
		}
		os.WriteFile(filepath.Join(dir, "a_test.go"), []byte("TEST FILE\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "testdata", "x.go"), []byte("TESTDATA\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "README"), []byte("NOT GO\n"), 0o644)
	}
	return root
}

func checkGoSrcSplits(t *testing.T, g *GoSrc) {
	t.Helper()
	c := g.Config()
	fileSplit := map[string]Split{}
	dirSplit := map[string]Split{}
	for s := Train; s <= Test; s++ {
		for _, f := range g.Files(s) {
			if prev, ok := fileSplit[f]; ok {
				t.Fatalf("%s in %s and %s", f, prev, s)
			}
			fileSplit[f] = s
			d := path.Dir(f)
			if prev, ok := dirSplit[d]; ok && prev != s {
				t.Fatalf("package %s in %s and %s", d, prev, s)
			}
			dirSplit[d] = s
			if got := GoSrcSplit(d, c.ValPercent, c.TestPercent); got != s {
				t.Fatalf("%s: in %s, GoSrcSplit says %s", f, s, got)
			}
			if strings.HasSuffix(f, "_test.go") || slices.Contains(strings.Split(f, "/"), "testdata") || !strings.HasSuffix(f, ".go") {
				t.Fatalf("%s should have been skipped", f)
			}
		}
	}
}

func TestGoSrcSplit(t *testing.T) {
	root := fakeGoTree(t, 200)
	g, err := NewGoSrc(GoSrcConfig{Root: root, SeqLen: 16, ValPercent: 10, TestPercent: 10})
	if err != nil {
		t.Fatal(err)
	}
	checkGoSrcSplits(t, g)
	total := 0
	for s := Train; s <= Test; s++ {
		total += len(g.Files(s))
		if bytes.Contains(g.Bytes(s), []byte("TEST")) || bytes.Contains(g.Bytes(s), []byte("NOT GO")) {
			t.Errorf("%s: test, testdata or non-Go bytes leaked in", s)
		}
	}
	if total != 400 {
		t.Errorf("%d files, want 400", total)
	}
	// Stable: a second read gives the same bytes.
	h, _ := NewGoSrc(GoSrcConfig{Root: root, SeqLen: 16, ValPercent: 10, TestPercent: 10})
	if !bytes.Equal(g.Bytes(Test), h.Bytes(Test)) {
		t.Error("two reads differ")
	}
}

func TestGoSrcWindows(t *testing.T) {
	root := fakeGoTree(t, 60)
	for _, c := range []struct{ T, ctx int }{{1, 0}, {7, 0}, {64, 0}, {7, 3}, {7, 6}, {64, 48}, {64, 1}} {
		g, err := NewGoSrc(GoSrcConfig{Root: root, SeqLen: c.T, ValPercent: 20, TestPercent: 20, EvalContext: c.ctx})
		if err != nil {
			t.Fatal(err)
		}
		for s := Train; s <= Test; s++ {
			// Scored targets over all windows reproduce bytes[1:] exactly
			// once, in order, and (validation and test) each has at least
			// ctx tokens before it in its window unless it is among the
			// split's first ctx targets.
			T, ctx, stride := c.T, c.ctx, c.T-c.ctx
			if s == Train {
				ctx, stride = 0, c.T
			}
			b := g.Bytes(s)
			var got []byte
			tok := make([]int32, T)
			tg := make([]int32, T)
			for i := range g.Len(s) {
				n := g.ExampleLen(s, i)
				if n < 1 || n > T {
					t.Fatalf("T=%d ctx=%d %s window %d: %d tokens", T, c.ctx, s, i, n)
				}
				g.Example(tok[:n], tg[:n], s, i)
				scored := 0
				for j := range n {
					if int(tok[j]) != int(b[i*stride+j]) {
						t.Fatalf("T=%d ctx=%d %s window %d token %d is not byte %d", T, c.ctx, s, i, j, i*stride+j)
					}
					if tg[j] < 0 {
						continue
					}
					if i > 0 && j < ctx {
						t.Fatalf("T=%d ctx=%d %s window %d scores position %d", T, c.ctx, s, i, j)
					}
					scored++
					got = append(got, byte(tg[j]))
				}
				if scored == 0 {
					t.Fatalf("T=%d ctx=%d %s window %d scores nothing", T, c.ctx, s, i)
				}
			}
			if !bytes.Equal(got, b[1:]) {
				t.Fatalf("T=%d ctx=%d %s: targets do not cover bytes[1:] (%d vs %d)", T, c.ctx, s, len(got), len(b)-1)
			}
		}
	}
	if _, err := NewGoSrc(GoSrcConfig{Root: root, SeqLen: 8, EvalContext: 8}); err == nil {
		t.Error("eval_context = seq_len: no error")
	}
}

func TestGoSrcCaps(t *testing.T) {
	root := fakeGoTree(t, 60)
	g, err := NewGoSrc(GoSrcConfig{Root: root, ValPercent: 20, TestPercent: 20, MaxTrain: 100, MaxVal: 50, MaxTest: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Bytes(Train)) != 100 || len(g.Bytes(Val)) != 50 || len(g.Bytes(Test)) != 30 {
		t.Errorf("capped sizes %d %d %d", len(g.Bytes(Train)), len(g.Bytes(Val)), len(g.Bytes(Test)))
	}
	if _, err := NewGoSrc(GoSrcConfig{Root: t.TempDir()}); err == nil {
		t.Error("empty tree: no error")
	}
}

func TestCompress(t *testing.T) {
	data := bytes.Repeat([]byte("func main() { fmt.Println(\"hello\") }\n"), 200)
	for _, c := range [][]string{{"gzip", "-9", "-c", "-n"}, {"xz", "-9e", "-c"}} {
		if _, err := exec.LookPath(c[0]); err != nil {
			b := Compress(c[0], c[1:], data)
			if b.Err == "" {
				t.Errorf("%s absent but no error", c[0])
			}
			continue
		}
		b := Compress(c[0], c[1:], data)
		if b.Err != "" || b.BitsPerByte <= 0 || b.BitsPerByte > 1 {
			t.Errorf("%s: %+v (repetitive text should compress below 1 bit per byte)", c[0], b)
		}
	}
	if b := Compress("tokenmix-no-such-compressor", nil, data); !strings.Contains(b.Err, "not installed") {
		t.Errorf("missing command: %+v", b)
	}
}

// TestGoSrcGoroot checks the real GOROOT tree for leakage (skipped with -short).
func TestGoSrcGoroot(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	root, err := GoRootSrc()
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Skip(err)
	}
	g, err := NewGoSrc(GoSrcConfig{Root: root, MaxTrain: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	checkGoSrcSplits(t, g)
}
