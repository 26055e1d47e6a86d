package arena

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
)

// writeFakeFMNIST writes a small Fashion-MNIST look-alike into dir: image i
// of a set has class i mod 10, pixel rows 2c to 2c+2 bright and the rest
// dim noise, so a linear model separates the classes.
func writeFakeFMNIST(t *testing.T, dir string, nTrain, nTest int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, s := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		im := &data.IDX{Dims: []int{s.n, 28, 28}, Data: make([]byte, s.n*data.FMNISTLen)}
		lb := &data.IDX{Dims: []int{s.n}, Data: make([]byte, s.n)}
		for i := range s.n {
			c := i % 10
			lb.Data[i] = byte(c)
			for p := range data.FMNISTLen {
				v := rng.IntN(60)
				if row := p / 28; row >= 2*c && row < 2*c+3 {
					v += 150
				}
				im.Data[i*data.FMNISTLen+p] = byte(v)
			}
		}
		for _, x := range []struct {
			name string
			idx  *data.IDX
		}{{s.prefix + "-images-idx3-ubyte", im}, {s.prefix + "-labels-idx1-ubyte", lb}} {
			var buf bytes.Buffer
			if err := data.WriteIDX(&buf, x.idx); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, x.name), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPixelBaselines: both references learn the fake dataset (a bright band
// of rows per class), give the same accuracy when trained again, and a task
// that is not a classification gets an error, not a panic.
func TestPixelBaselines(t *testing.T) {
	dir := t.TempDir()
	writeFakeFMNIST(t, dir, 520, 100)
	task, err := data.NewFMNIST(data.FMNISTConfig{DataDir: dir, Val: 20})
	if err != nil {
		t.Fatal(err)
	}
	a, b := pixelBaselines(task, 1), pixelBaselines(task, 1)
	if len(a) != 2 {
		t.Fatalf("%d baselines", len(a))
	}
	for i, bl := range a {
		// 500 training images: 4 batches of 128 per epoch, 5 epochs.
		if bl.Err != "" || bl.Accuracy < 0.9 || !bl.IsClassifier() || !strings.Contains(bl.Note, "= 20 steps, seed 1") {
			t.Errorf("%+v", bl)
		}
		if bl != b[i] {
			t.Errorf("trained again: %+v, then %+v", bl, b[i])
		}
	}
	rec, err := data.NewRecall(data.RecallConfig{Len: 16, Pairs: 2, Keys: 8, Values: 4, Train: 8, Val: 2, Test: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bl := pixelBaselines(rec, 1); bl[0].Err == "" || !strings.Contains(bl[0].Err, "classification") {
		t.Errorf("recall: %+v", bl)
	}
}
