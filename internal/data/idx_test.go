package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func idxBytes(t *testing.T, x *IDX, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := &buf
	if !gz {
		if err := WriteIDX(w, x); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	zw := gzip.NewWriter(w)
	if err := WriteIDX(zw, x); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func TestReadIDX(t *testing.T) {
	img := &IDX{Dims: []int{3, 2, 4}, Data: make([]byte, 24)}
	for i := range img.Data {
		img.Data[i] = byte(i * 11)
	}
	for _, gz := range []bool{false, true} {
		got, err := ReadIDX(bytes.NewReader(idxBytes(t, img, gz)))
		if err != nil {
			t.Fatalf("gzip=%v: %v", gz, err)
		}
		if !slices.Equal(got.Dims, img.Dims) || !bytes.Equal(got.Data, img.Data) {
			t.Errorf("gzip=%v: round trip gave dims %v", gz, got.Dims)
		}
	}
	good := idxBytes(t, img, false)
	// Each malformed stream and a fragment of the error it must give.
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "short header"},
		{"bad magic", append([]byte{1, 0}, good[2:]...), "bad magic"},
		{"int32 type", append([]byte{0, 0, 0x0c}, good[3:]...), "not supported"},
		{"zero dims", []byte{0, 0, 8, 0}, "zero dimensions"},
		{"short dims", good[:9], "short dimensions"},
		{"zero dim", []byte{0, 0, 8, 1, 0, 0, 0, 0}, "dimension 0 is 0"},
		{"truncated", good[:len(good)-1], "payload has 23 bytes"},
		{"trailing", append(slices.Clone(good), 7), "1 trailing bytes"},
		{"huge", []byte{0, 0, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "larger than"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "gzip"},
	} {
		_, err := ReadIDX(bytes.NewReader(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// ReadIDXFile checks the magic against the expected kind.
	dir := t.TempDir()
	p := filepath.Join(dir, "x.idx")
	os.WriteFile(p, good, 0o644)
	if _, err := ReadIDXFile(p, IDXMagicLabels); err == nil || !strings.Contains(err.Error(), "want 0x00000801") {
		t.Errorf("images read as labels: err = %v", err)
	}
	if _, err := ReadIDXFile(p, IDXMagicImages); err != nil {
		t.Error(err)
	}
}

// writeFMNIST writes a small fake Fashion-MNIST: image i of a set has every
// pixel equal to (i + off) mod 256 and label i mod 10.
func writeFMNIST(t *testing.T, dir, prefix string, n, off int, gz bool) {
	t.Helper()
	im := &IDX{Dims: []int{n, 28, 28}, Data: make([]byte, n*FMNISTLen)}
	lb := &IDX{Dims: []int{n}, Data: make([]byte, n)}
	for i := range n {
		for j := range FMNISTLen {
			im.Data[i*FMNISTLen+j] = byte(i + off)
		}
		lb.Data[i] = byte(i % 10)
	}
	ext := ""
	if gz {
		ext = ".gz"
	}
	os.WriteFile(filepath.Join(dir, prefix+"-images-idx3-ubyte"+ext), idxBytes(t, im, gz), 0o644)
	os.WriteFile(filepath.Join(dir, prefix+"-labels-idx1-ubyte"+ext), idxBytes(t, lb, gz), 0o644)
}

func TestFMNISTFake(t *testing.T) {
	dir := t.TempDir()
	writeFMNIST(t, dir, "train", 50, 0, true)
	writeFMNIST(t, dir, "t10k", 20, 100, false) // uncompressed is accepted too
	f, err := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if f.Len(Train) != 40 || f.Len(Val) != 10 || f.Len(Test) != 20 {
		t.Fatalf("split sizes %d %d %d", f.Len(Train), f.Len(Val), f.Len(Test))
	}
	tok := make([]int32, FMNISTLen)
	tg := make([]int32, 1)
	seen := map[int32]Split{}
	for s := Train; s <= Test; s++ {
		for i := range f.Len(s) {
			f.Example(tok, tg, s, i)
			id := tok[0] // the image's index in its file (+100 for test)
			if tok[FMNISTLen-1] != id || tg[0] != id%10 {
				t.Fatalf("%s %d: pixels %d…%d label %d", s, i, tok[0], tok[FMNISTLen-1], tg[0])
			}
			if prev, ok := seen[id]; ok {
				t.Fatalf("image %d in %s and %s", id, prev, s)
			}
			seen[id] = s
		}
	}
	f.Example(tok, tg, Test, 0)
	if tok[0] != 100 {
		t.Errorf("test split does not start with the first t10k image")
	}
	// Different seeds hold out different images; the same seed the same.
	g, _ := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 10, Seed: 3})
	h, _ := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 10, Seed: 4})
	if !bytes.Equal(f.pix[Val], g.pix[Val]) || bytes.Equal(f.pix[Val], h.pix[Val]) {
		t.Error("validation hold-out not determined by the seed")
	}
}

func TestFMNISTErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewFMNIST(FMNISTConfig{DataDir: dir}); !errors.Is(err, ErrNoFMNIST) ||
		!strings.Contains(err.Error(), "dataset-fashion-mnist") {
		t.Errorf("missing files: err = %v", err)
	}
	writeFMNIST(t, dir, "train", 30, 0, true)
	writeFMNIST(t, dir, "t10k", 5, 0, true)
	// Labels count differs from images count.
	lb := &IDX{Dims: []int{4}, Data: []byte{1, 2, 3, 4}}
	os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), idxBytes(t, lb, true), 0o644)
	if _, err := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 5}); err == nil || !strings.Contains(err.Error(), "5 images") {
		t.Errorf("count mismatch: err = %v", err)
	}
	// A label out of range.
	lb = &IDX{Dims: []int{5}, Data: []byte{1, 2, 3, 4, 12}}
	os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), idxBytes(t, lb, true), 0o644)
	if _, err := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 5}); err == nil || !strings.Contains(err.Error(), "label 12") {
		t.Errorf("bad label: err = %v", err)
	}
	// Too large a hold-out.
	writeFMNIST(t, dir, "t10k", 5, 0, true)
	if _, err := NewFMNIST(FMNISTConfig{DataDir: dir, Val: 30}); err == nil {
		t.Error("val = all training images: no error")
	}
}

// TestFMNISTInstalled reads the real files when the Debian package is
// installed (skipped otherwise).
func TestFMNISTInstalled(t *testing.T) {
	if _, err := os.Stat(FMNISTDir); err != nil {
		t.Skip("dataset-fashion-mnist not installed")
	}
	if testing.Short() {
		t.Skip("short")
	}
	f, err := NewFMNIST(FMNISTConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Len(Train) != 55000 || f.Len(Val) != 5000 || f.Len(Test) != 10000 {
		t.Errorf("split sizes %d %d %d", f.Len(Train), f.Len(Val), f.Len(Test))
	}
	// The first official test labels (Ankle boot, Pullover, Trouser, …),
	// from the Fashion-MNIST README's label table and t10k-labels.
	want := []byte{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}
	if !bytes.Equal(f.labels[Test][:10], want) {
		t.Errorf("first test labels %v, want %v", f.labels[Test][:10], want)
	}
}
