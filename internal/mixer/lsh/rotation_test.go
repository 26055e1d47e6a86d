package lsh

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRotationDraws checks the rotation generator against the committed
// draws in testdata/rotations.json, written by the Python implementation
// (tokenmix_torch.rng; regenerate with `/usr/bin/python3
// scripts/torch_reference.py --rotations internal/mixer/lsh/testdata/rotations.json`
// from the repository root). Both must give the same float64 bits.
func TestRotationDraws(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "rotations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Draws []struct {
			Seed   uint64    `json:"seed"`
			Layer  int       `json:"layer"`
			Round  int       `json:"round"`
			Head   int       `json:"head"`
			Bits   []string  `json:"bits"`
			Values []float64 `json:"values"`
		} `json:"draws"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Draws) == 0 {
		t.Fatal("no draws in testdata/rotations.json")
	}
	for _, d := range doc.Draws {
		key := rotationKey(d.Seed, uint64(d.Layer)<<40|uint64(d.Round)<<24|uint64(d.Head))
		for i, want := range d.Bits {
			got := rotationNormal(key, uint64(i))
			if s := fmt.Sprintf("%016x", math.Float64bits(got)); s != want {
				t.Errorf("seed %d layer %d round %d head %d draw %d: %v (%s), want %v (%s)",
					d.Seed, d.Layer, d.Round, d.Head, i, got, s, d.Values[i], want)
			}
		}
	}
}

// TestRotationLayout checks that Rotation fills dst [dh, NB/2] row-major
// with draws 0, 1, … of the stream of (seed, layer, r, h), and that the
// float32 rotation is the float64 one rounded.
func TestRotationLayout(t *testing.T) {
	const seed, layer, r, h, dh, nb = 5, 3, 1, 2, 4, 6
	m64 := &LSH[float64]{dh: dh, layer: layer}
	m32 := &LSH[float32]{dh: dh, layer: layer}
	d64 := make([]float64, dh*nb/2)
	d32 := make([]float32, dh*nb/2)
	m64.Rotation(d64, seed, r, h, nb)
	m32.Rotation(d32, seed, r, h, nb)
	key := rotationKey(seed, layer<<40|r<<24|h)
	for i := range d64 {
		if want := rotationNormal(key, uint64(i)); d64[i] != want || d32[i] != float32(want) {
			t.Fatalf("entry %d: %v, %v; want %v", i, d64[i], d32[i], want)
		}
	}
}

// TestRotationMoments checks that the draws look like N(0,1): mean 0 and
// variance 1 within sampling error over 1e5 draws.
func TestRotationMoments(t *testing.T) {
	key := rotationKey(42, 7)
	const n = 100000
	var s, s2 float64
	for i := range uint64(n) {
		z := rotationNormal(key, i)
		if math.Abs(z) > 6 {
			t.Fatalf("draw %d = %v outside [−6, 6]", i, z)
		}
		s += z
		s2 += z * z
	}
	mean, vari := s/n, s2/n-(s/n)*(s/n)
	if math.Abs(mean) > 0.02 || math.Abs(vari-1) > 0.02 {
		t.Errorf("mean %.4f, variance %.4f over %d draws; want 0 and 1", mean, vari, n)
	}
}
