package data

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

func newPF(t testing.TB, c PathfinderConfig) *Pathfinder {
	t.Helper()
	p, err := NewPathfinder(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPathfinderInfo(t *testing.T) {
	p := newPF(t, PathfinderConfig{})
	info := p.Info()
	want := Info{Name: "pathfinder", Mode: Classify, Vocab: 256, Classes: 2, Chance: 0.5, PadID: -1,
		MaxLen: 1024, Metric: Accuracy, LabelNames: []string{"0", "1"}}
	if info.Name != want.Name || info.Mode != want.Mode || info.Vocab != want.Vocab || info.Classes != want.Classes ||
		info.Chance != want.Chance || info.PadID != want.PadID || info.MaxLen != want.MaxLen || info.Metric != want.Metric ||
		!slices.Equal(info.LabelNames, want.LabelNames) {
		t.Errorf("info %+v, want %+v", info, want)
	}
	c := p.Config()
	if c.Len != 1024 || c.ContourLen != 14 || c.Distractors != 5 || c.Dash != 2 || c.Gap != 1 ||
		c.Train != 100000 || c.Val != 1000 || c.Test != 2000 || p.Side() != 32 {
		t.Errorf("defaults %+v, side %d", c, p.Side())
	}
	// The gap bound is round(gap·side/32)+1 (the package doc).
	for _, tc := range []struct{ len, gap, bound int }{{1024, 1, 2}, {4096, 1, 3}, {16384, 1, 5}, {1024, 2, 3}, {16384, 2, 9}} {
		if b := newPF(t, PathfinderConfig{Len: tc.len, Gap: tc.gap, Distractors: -1, ContourLen: 6}).GapBound(); b != tc.bound {
			t.Errorf("len %d gap %d: gap bound %d, want %d", tc.len, tc.gap, b, tc.bound)
		}
	}
}

// pfHash is FNV-1a over the first n examples of split s: each pixel and
// then the label, as little-endian uint32s.
func pfHash(p *Pathfinder, s Split, n int) uint64 {
	h := fnv.New64a()
	tok, tg := make([]int32, p.Config().Len), make([]int32, 1)
	buf := make([]byte, 4*(len(tok)+1))
	for i := range n {
		p.Example(tok, tg, s, i)
		for j, v := range append(tok, tg[0]) {
			binary.LittleEndian.PutUint32(buf[4*j:], uint32(v))
		}
		h.Write(buf)
	}
	return h.Sum64()
}

// TestPathfinderDeterministic: the hashes of the first examples are fixed
// (they change only when the generator does: then update them from the
// "got" values printed), and the same config built twice gives the same
// bytes.
func TestPathfinderDeterministic(t *testing.T) {
	for _, tc := range []struct {
		cfg  PathfinderConfig
		s    Split
		n    int
		want uint64
	}{
		{PathfinderConfig{}, Train, 16, 0x1f517a3d8deef4b5},
		{PathfinderConfig{}, Val, 16, 0x5f602a8534a44e05},
		{PathfinderConfig{}, Test, 16, 0xcfb4b8a5d8ec1c75},
		{PathfinderConfig{Seed: 7}, Train, 16, 0x141b1d9f1d558745},
		{PathfinderConfig{Len: 4096}, Test, 8, 0xe6ecb02a747ae856},
	} {
		a, b := newPF(t, tc.cfg), newPF(t, tc.cfg)
		ha, hb := pfHash(a, tc.s, tc.n), pfHash(b, tc.s, tc.n)
		if ha != hb {
			t.Errorf("%+v %s: two builds differ: %#016x, %#016x", tc.cfg, tc.s, ha, hb)
		}
		if ha != tc.want {
			t.Errorf("%+v %s: hash of the first %d examples %#016x, want %#016x (update the table if the generator changed on purpose)", tc.cfg, tc.s, tc.n, ha, tc.want)
		}
	}
	// Splits and seeds are different streams.
	p, q := newPF(t, PathfinderConfig{}), newPF(t, PathfinderConfig{Seed: 1})
	if pfHash(p, Train, 2) == pfHash(p, Val, 2) || pfHash(p, Train, 2) == pfHash(q, Train, 2) {
		t.Error("different splits or seeds give the same examples")
	}
}

// tracePathfinder decides from the pixels alone whether the two markers of
// a side×side image are joined. It finds the markers, the 8-connected
// components of pixels at PathfinderMarker (there must be two, each a
// filled square), then walks from the first over lit pixels (> 0), from a
// pixel to any lit pixel within Chebyshev distance bound, and reports
// whether it reaches the second. ok is false when the markers are not two
// squares.
func tracePathfinder(pix []int32, side, bound int) (joined, ok bool) {
	n := side * side
	comp := make([]int8, n)
	var stack []int
	nc := 0
	for p0 := range n {
		if pix[p0] != PathfinderMarker || comp[p0] != 0 {
			continue
		}
		if nc++; nc > 2 {
			return false, false
		}
		comp[p0] = int8(nc)
		stack = append(stack[:0], p0)
		x0, y0, x1, y1, size := side, side, -1, -1, 0
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := p%side, p/side
			x0, y0, x1, y1, size = min(x0, x), min(y0, y), max(x1, x), max(y1, y), size+1
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					qx, qy := x+dx, y+dy
					if qx < 0 || qy < 0 || qx >= side || qy >= side {
						continue
					}
					if q := qy*side + qx; pix[q] == PathfinderMarker && comp[q] == 0 {
						comp[q] = int8(nc)
						stack = append(stack, q)
					}
				}
			}
		}
		if x1-x0 != y1-y0 || size != (x1-x0+1)*(y1-y0+1) {
			return false, false
		}
	}
	if nc != 2 {
		return false, false
	}
	seen := make([]bool, n)
	var queue []int
	for p, c := range comp {
		if c == 1 {
			seen[p] = true
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		x, y := p%side, p/side
		for qy := max(y-bound, 0); qy <= min(y+bound, side-1); qy++ {
			for qx := max(x-bound, 0); qx <= min(x+bound, side-1); qx++ {
				q := qy*side + qx
				if pix[q] == 0 || seen[q] {
					continue
				}
				if comp[q] == 2 {
					return true, true
				}
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	return false, true
}

// TestPathfinderTracer re-derives every label from the pixels alone with
// tracePathfinder at the stated gap bound. By construction the two must
// always agree; the test asks for 99% at each size.
func TestPathfinderTracer(t *testing.T) {
	for _, tc := range []struct {
		cfg PathfinderConfig
		n   int
	}{
		{PathfinderConfig{Len: 1024}, 1000},
		{PathfinderConfig{Len: 4096}, 1000},
		{PathfinderConfig{Len: 16384}, 1000},
		{PathfinderConfig{Len: 1024, Dash: 3, Gap: 2, ContourLen: 9, Distractors: 1, Seed: 3}, 300},
		{PathfinderConfig{Len: 576, ContourLen: 6, Distractors: -1, Seed: 4}, 300}, // 24×24
	} {
		p := newPF(t, tc.cfg)
		side, bound := p.Side(), p.GapBound()
		tok, tg := make([]int32, side*side), make([]int32, 1)
		agree, bad := 0, 0
		for i := range tc.n {
			p.Example(tok, tg, Test, i%p.Len(Test))
			joined, ok := tracePathfinder(tok, side, bound)
			if !ok {
				bad++
			}
			if ok && joined == (tg[0] == 1) {
				agree++
			}
		}
		rate := float64(agree) / float64(tc.n)
		t.Logf("%d×%d (gap bound %d): the tracer agrees with the label on %d of %d images (%.1f%%)", side, side, bound, agree, tc.n, 100*rate)
		if rate < 0.99 || bad > 0 {
			t.Errorf("%+v: agreement %.3f, %d images without two square markers", tc.cfg, rate, bad)
		}
	}
}

// TestPathfinderBalance: labels are exactly balanced in pairs, and not the
// index's parity.
func TestPathfinderBalance(t *testing.T) {
	p := newPF(t, PathfinderConfig{Seed: 11})
	tok, tg := make([]int32, 1024), make([]int32, 1)
	ones, parity := 0, 0
	for i := range 1000 {
		p.Example(tok, tg, Train, i)
		ones += int(tg[0])
		if int(tg[0]) == i%2 {
			parity++
		}
	}
	if ones < 450 || ones > 550 || parity < 400 || parity > 600 {
		t.Errorf("%d of 1000 labels are 1, %d equal i mod 2", ones, parity)
	}
	t.Logf("%d of 1000 labels are 1; %d equal i mod 2", ones, parity)
}

// TestPathfinderClassStats: simple statistics of the pixels do not tell the
// classes apart: the mean number of lit pixels and the mean ink (sum of
// levels) differ by less than 2% between positives and negatives. The
// distance between the markers is logged too (it differs a little: in a
// negative the second marker ends the contour whose origin lies 8.5 pixels
// from the first marker).
func TestPathfinderClassStats(t *testing.T) {
	for _, n := range []int{1024, 4096, 16384} {
		p := newPF(t, PathfinderConfig{Len: n, Seed: 5})
		side := p.Side()
		tok, tg := make([]int32, n), make([]int32, 1)
		var lit, ink, dist, cnt [2]float64
		for i := range 1000 {
			p.Example(tok, tg, Train, i)
			var mx, my []int
			for j, v := range tok {
				if v > 0 {
					lit[tg[0]]++
					ink[tg[0]] += float64(v)
				}
				if v == PathfinderMarker {
					mx, my = append(mx, j%side), append(my, j/side)
				}
			}
			cnt[tg[0]]++
			// The Chebyshev extent of the marker pixels: the distance
			// between the two squares' centres plus their side less 1.
			dist[tg[0]] += float64(max(slices.Max(mx)-slices.Min(mx), slices.Max(my)-slices.Min(my)))
		}
		rel := func(v [2]float64) float64 {
			a, b := v[0]/cnt[0], v[1]/cnt[1]
			return (b - a) / ((a + b) / 2)
		}
		t.Logf("%d×%d: lit pixels %.1f (label 0) vs %.1f (label 1), %+.2f%%; ink %.0f vs %.0f, %+.2f%%; marker span %.1f vs %.1f px",
			side, side, lit[0]/cnt[0], lit[1]/cnt[1], 100*rel(lit), ink[0]/cnt[0], ink[1]/cnt[1], 100*rel(ink), dist[0]/cnt[0], dist[1]/cnt[1])
		if r := rel(lit); r > 0.02 || r < -0.02 {
			t.Errorf("%d×%d: lit pixels differ by %.2f%% between the classes", side, side, 100*r)
		}
		if r := rel(ink); r > 0.02 || r < -0.02 {
			t.Errorf("%d×%d: ink differs by %.2f%% between the classes", side, side, 100*r)
		}
	}
}

// TestPathfinderImage checks the picture's invariants at each size: pixel
// levels, two markers, and every dash pixel within the image.
func TestPathfinderImage(t *testing.T) {
	for _, n := range []int{1024, 4096, 16384} {
		p := newPF(t, PathfinderConfig{Len: n, Seed: 2})
		tok, tg := make([]int32, n+3), make([]int32, 1)
		for j := range tok {
			tok[j] = -7
		}
		for i := range 50 {
			p.Example(tok, tg, Val, i)
			if tok[n] != -7 {
				t.Fatalf("%d: Example wrote past T", n)
			}
			for j, v := range tok[:n] {
				if v != 0 && v != PathfinderMarker && (v < PathfinderDashMin || v > PathfinderDashMax) {
					t.Fatalf("%d: pixel %d of example %d is %d", n, j, i, v)
				}
			}
			if tg[0] != 0 && tg[0] != 1 {
				t.Fatalf("label %d", tg[0])
			}
		}
	}
}

func TestPathfinderConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg       PathfinderConfig
		key, want string
	}{
		{PathfinderConfig{Len: 1000}, "pathfinder.len", "want side² with side ≥ 16"},
		{PathfinderConfig{Len: 225}, "pathfinder.len", "got 225"},
		{PathfinderConfig{Len: -1024}, "pathfinder.len", "got -1024"},
		{PathfinderConfig{ContourLen: -1}, "pathfinder.contour_len", "want ≥ 1, got -1"},
		{PathfinderConfig{Distractors: -2}, "pathfinder.distractors", "want ≥ 0, or −1 for none, got -2"},
		{PathfinderConfig{Distractors: 500}, "pathfinder.distractors", "want ≤ 200, got 500"},
		{PathfinderConfig{Dash: -1}, "pathfinder.dash", "want ≥ 1, got -1"},
		{PathfinderConfig{Gap: -2}, "pathfinder.gap", "want ≥ 1, got -2"},
		{PathfinderConfig{Train: -1}, "pathfinder.train", "want ≥ 0, got -1"},
		{PathfinderConfig{Val: -1}, "pathfinder.val", "want ≥ 0, got -1"},
		{PathfinderConfig{Test: -1}, "pathfinder.test", "want ≥ 0, got -1"},
		{PathfinderConfig{Distractors: 40}, "pathfinder.distractors", "want ≤ 70%"},
		{PathfinderConfig{Distractors: 8}, "pathfinder.distractors", "16 test images started over more than 5 times each"},
		{PathfinderConfig{Len: 4096, Distractors: 9}, "pathfinder.distractors", "do not fit a 64×64 image"},
		{PathfinderConfig{ContourLen: 40}, "pathfinder.contour_len", "want ≤ 70%"},
		{PathfinderConfig{ContourLen: 30}, "pathfinder.contour_len", "do not fit a 32×32 image"},
		{PathfinderConfig{Len: 256}, "pathfinder.contour_len", "do not fit a 16×16 image"},
		{PathfinderConfig{Len: 256, ContourLen: 4}, "pathfinder.contour_len", "want ≥ 5 at 16×16 with dash 2 and gap 1"},
		{PathfinderConfig{Len: 16384, ContourLen: 2, Gap: 2}, "pathfinder.contour_len", "want ≥ 3 at 128×128"},
	} {
		_, err := NewPathfinder(tc.cfg)
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.HasPrefix(err.Error(), tc.key+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.key+": …"+tc.want)
		}
	}
	// The smallest side works with short contours.
	p := newPF(t, PathfinderConfig{Len: 256, ContourLen: 5, Distractors: -1})
	tok, tg := make([]int32, 256), make([]int32, 1)
	p.Example(tok, tg, Train, 0)
	if joined, ok := tracePathfinder(tok, 16, p.GapBound()); !ok || joined != (tg[0] == 1) {
		t.Errorf("16×16: tracer %v %v, label %d", joined, ok, tg[0])
	}
}

func benchmarkPathfinder(b *testing.B, n int) {
	p := newPF(b, PathfinderConfig{Len: n})
	tok, tg := make([]int32, n), make([]int32, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Example(tok, tg, Train, i%p.Len(Train))
	}
}

func BenchmarkPathfinder32(b *testing.B)  { benchmarkPathfinder(b, 1024) }
func BenchmarkPathfinder64(b *testing.B)  { benchmarkPathfinder(b, 4096) }
func BenchmarkPathfinder128(b *testing.B) { benchmarkPathfinder(b, 16384) }
