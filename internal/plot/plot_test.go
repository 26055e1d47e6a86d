package plot

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// checkPNG decodes the file and checks that it is a non-blank image of the
// requested size (16 × 10 cm at gonum's default 96 dpi).
func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := img.Bounds()
	if r.Dx() < 500 || r.Dy() < 300 {
		t.Errorf("%s: %v, want about 605×378", path, r)
	}
	// Count coloured (non-grey) pixels: the data must have been drawn.
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			c0, c1, c2, _ := img.At(x, y).RGBA()
			if max(c0, c1, c2)-min(c0, c1, c2) > 0x3000 {
				n++
			}
		}
	}
	if n < 20 {
		t.Errorf("%s: only %d coloured pixels", path, n)
	}
}

func TestLines(t *testing.T) {
	dir := t.TempDir()
	var ss []Series
	for k := range 12 { // more series than palette colours
		s := Series{Name: "mixer" + string(rune('a'+k))}
		for i := range 100 {
			s.X = append(s.X, float64(i*10))
			s.Y = append(s.Y, 2+math.Exp(-float64(i)/float64(10+k)))
		}
		ss = append(ss, s)
	}
	ss = append(ss, Series{Name: "empty"}, Series{Name: "nan", X: []float64{1}, Y: []float64{math.NaN()}})
	p := filepath.Join(dir, "loss.png")
	if err := Lines(p, Figure{Title: "loss", XLabel: "step", YLabel: "loss", HLines: []HLine{{"unigram", 2.5}}}, ss); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	// Log–log with powers of two on x and a non-positive point dropped.
	ll := []Series{{Name: "full", X: []float64{256, 512, 1024, 2048}, Y: []float64{1, 4, 16, 64}},
		{Name: "aft", X: []float64{256, 512, 1024, 2048}, Y: []float64{0, 2, 4, 8}}}
	p = filepath.Join(dir, "scaling.png")
	if err := Lines(p, Figure{Title: "time", LogX: true, LogY: true, LegendLeft: true}, ll); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	if err := Lines(filepath.Join(dir, "x.png"), Figure{}, []Series{{Name: "e"}}); err == nil {
		t.Error("no data: no error")
	}
}

func TestScatter(t *testing.T) {
	dir := t.TempDir()
	pts := []Point{{"full", 1200, 2.1}, {"fnet", 9000, 2.5}, {"lsh", 3000, 2.3}, {"bad", math.Inf(1), 0.2}}
	p := filepath.Join(dir, "scatter.png")
	if err := Scatter(p, Figure{Title: "bits per byte vs speed", XLabel: "tokens/s", YLabel: "bits per byte", LogX: true, HLines: []HLine{{"gzip -9", 2.24}, {"xz -9e", 1.88}}}, pts); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	if err := Scatter(p, Figure{}, nil); err == nil {
		t.Error("no data: no error")
	}
}

func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		labels []string
	}{
		{256, 4096, []string{"256", "512", "1K", "2K", "4K"}},
		{300, 1000, []string{"512"}}, // fewer than two powers of two: decades instead
	} {
		var got []string
		for _, tk := range (logTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if c.lo == 256 && !equal(got, c.labels) {
			t.Errorf("[%g,%g]: labels %v, want %v", c.lo, c.hi, got, c.labels)
		}
		if c.lo == 300 && equal(got, c.labels) {
			t.Errorf("[%g,%g]: want decade ticks, got %v", c.lo, c.hi, got)
		}
	}
	// Within one decade and at most one power of two (training tokens/s of
	// an arena), 1-2-5 multiples are labelled.
	for _, c := range []struct {
		lo, hi float64
		labels []string
	}{
		{22400, 47000, []string{"25000", "30000", "35000", "40000", "45000"}},
		{0.31, 0.58, []string{"0.35", "0.4", "0.45", "0.5", "0.55"}},
		{1200, 1900, []string{"1200", "1400", "1600", "1800"}},
	} {
		var got []string
		for _, tk := range (logTicks{}).Ticks(c.lo, c.hi) {
			got = append(got, tk.Label)
		}
		if !equal(got, c.labels) {
			t.Errorf("[%g,%g]: labels %v, want %v", c.lo, c.hi, got, c.labels)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
