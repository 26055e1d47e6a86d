package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
)

// PathfinderConfig sets the Pathfinder task. Zero fields take the defaults
// noted. Lengths in pixels are given at 32×32 and scale with the image
// (see Pathfinder).
type PathfinderConfig struct {
	// Len is the sequence length T = side², a perfect square with side ≥
	// 16 (1024; LRA's sizes are 1024, 4096 and 16384: 32×32, 64×64 and
	// 128×128).
	Len int `json:"len"`
	// ContourLen is the number of dashes of each of the two contours that
	// can carry a marker (14, LRA's hardest setting).
	ContourLen int `json:"contour_len"`
	// Distractors is the number of unmarked contours, each of
	// max(1, ContourLen/3) dashes (5; −1 for none).
	Distractors int `json:"distractors"`
	// Dash is the length of a dash and Gap that of the unlit stretch
	// between two dashes of a contour, in pixels along the dash's major
	// axis at 32×32 (2 and 1).
	Dash int `json:"dash"`
	Gap  int `json:"gap"`
	// Train, Val, Test are the split sizes (100000, 1000, 2000).
	Train int    `json:"train"`
	Val   int    `json:"val"`
	Test  int    `json:"test"`
	Seed  uint64 `json:"seed"`
}

func (c *PathfinderConfig) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Len, 1024)
	def(&c.ContourLen, 14)
	def(&c.Distractors, 5)
	def(&c.Dash, 2)
	def(&c.Gap, 1)
	def(&c.Train, 100000)
	def(&c.Val, 1000)
	def(&c.Test, 2000)
}

// Pathfinder levels: the background is 0, every dash has one grey level in
// [PathfinderDashMin, PathfinderDashMax], and the markers are
// PathfinderMarker, which no dash reaches.
const (
	PathfinderDashMin = 128
	PathfinderDashMax = 224
	PathfinderMarker  = 255
)

const (
	// pfContinuity is κ of the turn weights cos²(κδ), |δ| < π/(2κ):
	// Linsley's "continuity" (1.4 in his generator's defaults, 1.0 and 1.8
	// in LRA's images); 1.4 bounds a turn by 64° between two dashes.
	pfContinuity = 1.4
	// pfTries bounds the failures of one step before it gives up: draws of
	// the second origin or of one dash (then the previous dash is drawn
	// again), contours started over from their origin, and distractor
	// origins (then the image starts over).
	pfTries = 20
	// pfBudget bounds the draws per dash of one contour, backtracking
	// included, before the contour starts over from its origin.
	pfBudget = 20
	// pfRestarts bounds the images started over for one example.
	// NewPathfinder rejects configs whose images start over more than
	// pfMaxRestarts times on average (or whose contours would cover more
	// than pfMaxFill of the image), so that the bound is never reached.
	pfRestarts    = 10000
	pfMaxRestarts = 5
	pfMaxFill     = 0.7
	pfProbe       = 16  // images drawn to measure the restarts
	pfMulti       = 255 // claim: more than one contour
)

// Pathfinder is the Pathfinder task of the Long Range Arena (Tay et al.
// 2021, "Long Range Arena: A Benchmark for Efficient Transformers"), after
// Linsley et al. 2018 ("Learning long-range spatial dependencies with
// horizontal gated recurrent units") and drawn by our own generator: a
// grey-level side×side image, read row by row as T = side² pixel tokens
// (0–255), shows two square markers and several dashed curved contours;
// the label is 1 when the markers sit on the two ends of one contour and 0
// when they sit on ends of two different contours.
//
// Every image holds two contours of ContourLen dashes that can carry
// markers, from two origins max(7k, √2·(2m+g+3)) pixels apart (8.5 at
// 32×32; Linsley's seed distance was 7), drawn one after the other in a
// random order, then Distractors contours of max(1, ContourLen/3) dashes
// from random origins. The first marker sits on the origin of one of the
// two contours, chosen at random; the second on the far end of the same
// contour (label 1) or of the other (label 0), as in Linsley's generator.
// Images are drawn without regard to the label, which picks only which
// far end is marked, so the two classes differ in nothing but the
// connection. All four ends keep room for a marker.
//
// A contour is a random walk with good continuation: each dash turns from
// the previous one by a δ in steps of about 1°, with weights ∝ cos²(1.4δ),
// |δ| < 64°. A dash is a digital line (one pixel per step along its major
// axis, of stroke width w), and consecutive dashes are separated by exactly
// g unlit pixels along the major axis. Sizes scale with k = side/32:
// stroke width w = max(1, round(k)), dash max(w, round(Dash·k)) pixels, gap
// g = max(1, round(Gap·k)) pixels, markers (2m+1)² squares with
// m = max(1, ⌊1.5k⌋) (3×3, 7×7 and 13×13 at 32, 64 and 128), so 64×64 and
// 128×128 show about the 32×32 picture at a higher resolution. Dashes have
// grey levels in [128, 224] (one level per dash), markers 255, the
// background 0.
//
// The gap bound is g+1 (GapBound): two consecutive dashes of a contour have
// lit pixels within Chebyshev distance g+1 of each other, and every two
// contours, markers included, stay more than g+1 apart, as do the dashes
// of one contour that are not neighbours. A dash that comes closer is drawn
// again; one that fails pfTries draws takes the previous dash back, a
// contour that runs out of draws starts over from its origin, and an image
// whose placements keep failing starts over with the next random draws.
// So joining the lit pixels that lie within the gap bound of each other
// yields exactly the contours, and the label can be read off the pixels
// (the tests do).
//
// Classes are exactly balanced: example i has label (i mod 2) XOR a bit
// drawn from (Seed, split, ⌊i/2⌋), so each pair 2j, 2j+1 holds one of each
// in a seeded order. Example i of split s is generated on demand from a PCG
// seeded by (Seed, s, i).
type Pathfinder struct {
	cfg  PathfinderConfig
	geom pfGeom
	pool sync.Pool // *pfScratch
}

// NewPathfinder returns the Pathfinder task, or a KeyError for an
// impossible config: len not a square of a side ≥ 16, negative sizes,
// contours too short for their markers to lie apart, or contours too many
// or too long to fit the image with their clearance (judged by drawing
// test images).
func NewPathfinder(c PathfinderConfig) (*Pathfinder, error) {
	c.defaults()
	side := int(math.Round(math.Sqrt(float64(max(c.Len, 0)))))
	switch {
	case c.Len < 0 || side*side != c.Len || side < 16:
		return nil, keyErr("pathfinder", "len", "want side² with side ≥ 16 (256, 1024, 4096, 16384, ...), got %d", c.Len)
	case c.ContourLen < 1:
		return nil, keyErr("pathfinder", "contour_len", "want ≥ 1, got %d", c.ContourLen)
	case c.Distractors < -1:
		return nil, keyErr("pathfinder", "distractors", "want ≥ 0, or −1 for none, got %d", c.Distractors)
	case c.Distractors > 200:
		return nil, keyErr("pathfinder", "distractors", "want ≤ 200, got %d", c.Distractors)
	case c.Dash < 1:
		return nil, keyErr("pathfinder", "dash", "want ≥ 1, got %d", c.Dash)
	case c.Gap < 1:
		return nil, keyErr("pathfinder", "gap", "want ≥ 1, got %d", c.Gap)
	}
	if err := checkSplits("pathfinder", c.Train, c.Val, c.Test); err != nil {
		return nil, err
	}
	g := newPFGeom(c, side)
	if n := g.minContour(); c.ContourLen < n {
		return nil, keyErr("pathfinder", "contour_len", "want ≥ %d at %d×%d with dash %d and gap %d, for the markers on the two ends of a contour to lie apart, got %d",
			n, side, side, c.Dash, c.Gap, c.ContourLen)
	}
	if why := g.crowded(); why != "" {
		key, t := "distractors", g
		if t.distractors = 0; t.crowded() != "" {
			key = "contour_len" // too long even without distractors
		}
		return nil, keyErr("pathfinder", key, "2 contours of %d dashes and %d of %d (dash %d, gap %d) do not fit a %d×%d image: %s; want fewer or shorter contours, or a larger len",
			g.contour, g.distractors, g.distractor, c.Dash, c.Gap, side, side, why)
	}
	p := &Pathfinder{cfg: c, geom: g}
	p.pool.New = func() any { return p.geom.scratch() }
	return p, nil
}

// Config returns the resolved configuration.
func (p *Pathfinder) Config() PathfinderConfig { return p.cfg }

// Side is the image's side: T = Side².
func (p *Pathfinder) Side() int { return p.geom.side }

// GapBound is the largest Chebyshev distance between lit pixels of two
// consecutive dashes of a contour, g+1 for a gap of g pixels; lit pixels of
// different contours are always farther apart.
func (p *Pathfinder) GapBound() int { return p.geom.bound }

// Info implements Task.
func (p *Pathfinder) Info() Info {
	return Info{Name: "pathfinder", Mode: Classify, Vocab: 256, Classes: 2, Chance: 0.5, PadID: -1,
		MaxLen: p.cfg.Len, Metric: Accuracy, LabelNames: []string{"0", "1"}}
}

// Len implements Task.
func (p *Pathfinder) Len(s Split) int {
	return [3]int{p.cfg.Train, p.cfg.Val, p.cfg.Test}[s]
}

// ExampleLen implements Task.
func (p *Pathfinder) ExampleLen(Split, int) int { return p.cfg.Len }

// Example implements Task: the T pixels into tokens and the label (1:
// the markers are joined) into targets[0].
func (p *Pathfinder) Example(tokens, targets []int32, s Split, i int) {
	if i < 0 || i >= p.Len(s) {
		panic(fmt.Sprintf("data: pathfinder example %d of %s out of range", i, s))
	}
	sc := p.pool.Get().(*pfScratch)
	defer p.pool.Put(sc)
	sc.pcg.Seed(p.cfg.Seed^0x7061746866696e64, uint64(s)<<56|uint64(i)) // "pathfind"
	var c [2]pfContour
	for a := 0; ; a++ {
		if a == pfRestarts {
			panic(fmt.Sprintf("data: pathfinder example %d of %s: the contours did not fit in %d images", i, s, pfRestarts))
		}
		var ok bool
		if c, ok = p.geom.image(sc); ok {
			break
		}
	}
	o := sc.rng.IntN(2) // the contour whose origin is marked
	label := p.label(s, i)
	end := o
	if label == 0 {
		end = 1 - o
	}
	p.geom.paint(tokens[:p.cfg.Len], sc.blocks, c[o].ox, c[o].oy, c[end].ex, c[end].ey)
	targets[0] = label
}

// label is (i mod 2) XOR a bit drawn from (Seed, s, ⌊i/2⌋).
func (p *Pathfinder) label(s Split, i int) int32 {
	var h rand.PCG
	h.Seed(p.cfg.Seed^0x6c6162656c, uint64(s)<<56|uint64(i>>1)) // "label"
	return int32(i&1) ^ int32(h.Uint64()>>63)
}

// PathfinderText draws a side×side Pathfinder image for people: one line
// per row, '.' for the background, 'o' for a dash pixel, '@' for a marker
// pixel.
func PathfinderText(tokens []int32, side int) string {
	var b strings.Builder
	for y := range side {
		for _, v := range tokens[y*side : (y+1)*side] {
			switch {
			case v == 0:
				b.WriteByte('.')
			case v >= PathfinderMarker:
				b.WriteByte('@')
			default:
				b.WriteByte('o')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// pfGeom is the pixel geometry of one config (see Pathfinder).
type pfGeom struct {
	side     int     // T = side²
	w, hw    int     // stroke width; a block's pixels are [p−hw, p−hw+w) around sample pixel p
	dashPx   int     // dash length along its major axis
	gapPx    int     // unlit pixels between two dashes along the major axis
	bound    int     // the gap bound, gapPx+1
	mark     int     // markers are (2·mark+1)² squares
	seedDist float64 // distance between the two origins

	contour, distractor, distractors int // dashes per contour, per distractor; distractor count
}

func newPFGeom(c PathfinderConfig, side int) pfGeom {
	k := float64(side) / 32
	g := pfGeom{side: side, contour: c.ContourLen, distractor: max(1, c.ContourLen/3), distractors: max(c.Distractors, 0)}
	g.w = max(1, int(math.Round(k)))
	g.hw = (g.w - 1) / 2
	g.dashPx = max(g.w, int(math.Round(float64(c.Dash)*k)))
	g.gapPx = max(1, int(math.Round(float64(c.Gap)*k)))
	g.bound = g.gapPx + 1
	g.mark = max(1, int(1.5*k))
	// LRA's 7 pixels at 32×32 (Linsley's seed_distance), and far enough
	// for the two origin markers to keep their clearance.
	g.seedDist = max(7*k, math.Sqrt2*float64(2*g.mark+g.bound+2))
	return g
}

// minContour is the least number of dashes of a contour that reaches,
// straight along an axis, 2 pixels beyond the least distance between the
// centres of its two marker squares.
func (g *pfGeom) minContour() int {
	n := 1
	for n*g.dashPx+(n-1)*g.gapPx-1 < 2*g.mark+g.bound+3 {
		n++
	}
	return n
}

// crowded says why the contours do not fit the image, or "" when they do:
// their estimated cover exceeds pfMaxFill, or pfProbe images of a fixed
// stream start over more than pfMaxRestarts times each on average.
func (g *pfGeom) crowded() string {
	if f := g.fill(); f > pfMaxFill {
		return fmt.Sprintf("with their clearance they would cover %.0f%% of it, want ≤ %.0f%%", 100*f, 100*pfMaxFill)
	}
	s := g.scratch()
	s.pcg.Seed(0x70726f6265, 0) // "probe"
	restarts := 0
	for range pfProbe {
		for {
			if _, ok := g.image(s); ok {
				break
			}
			if restarts++; restarts > pfMaxRestarts*pfProbe {
				return fmt.Sprintf("%d test images started over more than %d times each on average", pfProbe, pfMaxRestarts)
			}
		}
	}
	return ""
}

// scratch returns a new generator state for images of g.
func (g *pfGeom) scratch() *pfScratch {
	s := &pfScratch{claim: make([]uint8, g.side*g.side)}
	s.rng = rand.New(&s.pcg)
	return s
}

// fill estimates the share of the image the contours take with their
// clearance: each contour's length along its major axes times w+bound (the
// pitch of parallel contours at the least distance), plus the four marker
// squares with theirs.
func (g *pfGeom) fill() float64 {
	path := func(n int) int { return n*g.dashPx + (n-1)*g.gapPx }
	sq := 2*g.mark + 1 + g.bound
	a := (2*path(g.contour)+g.distractors*path(g.distractor))*(g.w+g.bound) + 4*sq*sq
	return float64(a) / float64(g.side*g.side)
}

// pfBlock is a w×w block of a dash: top-left pixel and grey level.
type pfBlock struct{ x, y, level int32 }

// pfStep is a placed dash of the contour being drawn: where its blocks end
// in pfScratch.cand, its last sample and its heading (a vector).
type pfStep struct {
	end          int
	x, y, ux, uy float64
}

// pfScratch is one generator's state, reused across examples.
type pfScratch struct {
	pcg rand.PCG
	rng *rand.Rand
	// claim[y·side+x] is 0, the id of the one contour with a lit or
	// reserved pixel within the gap bound of (x, y), or pfMulti.
	claim  []uint8
	blocks []pfBlock // the committed dashes
	cand   []pfBlock // the contour being drawn
	steps  []pfStep  // its dashes
	fails  []int     // failed draws per dash of it
}

// pfContour is one of the two contours that can carry markers: its origin
// and its far end, the centres of their marker squares.
type pfContour struct {
	id     uint8
	ox, oy int
	ex, ey int
}

func pfRound(v float64) int32 { return int32(math.Floor(v + 0.5)) }

// pfTurns are the turns a dash may take from the previous one: δ from
// −π/(2κ) to π/(2κ) in 129 even steps, with cumulative weights ∝ cos²(κδ).
var pfTurns = func() (t struct{ cos, sin, cdf [129]float64 }) {
	lim, sum := math.Pi/(2*pfContinuity), 0.0
	for j := range t.cdf {
		d := lim * float64(j-64) / 64
		t.sin[j], t.cos[j] = math.Sincos(d)
		c := math.Cos(pfContinuity * d)
		sum += c * c
		t.cdf[j] = sum
	}
	for j := range t.cdf {
		t.cdf[j] /= sum
	}
	return t
}()

// pfTurn turns the heading (ux, uy) by a δ drawn from pfTurns.
func pfTurn(r *rand.Rand, ux, uy float64) (float64, float64) {
	u, lo, hi := r.Float64(), 0, len(pfTurns.cdf)-1
	for lo < hi { // the first j with u < cdf[j]
		if mid := (lo + hi) / 2; u < pfTurns.cdf[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	c, s := pfTurns.cos[lo], pfTurns.sin[lo]
	return ux*c - uy*s, ux*s + uy*c
}

func pfLevel(r *rand.Rand) int32 {
	return int32(PathfinderDashMin + r.IntN(PathfinderDashMax-PathfinderDashMin+1))
}

// image draws one image's contours into s (blocks and claims) and returns
// the two contours that can carry markers, or false when a placement
// failed pfTries times.
func (g *pfGeom) image(s *pfScratch) (c [2]pfContour, ok bool) {
	r := s.rng
	clear(s.claim)
	s.blocks = s.blocks[:0]
	m := g.mark
	c[0] = pfContour{id: 1, ox: m + r.IntN(g.side-2*m), oy: m + r.IntN(g.side-2*m)}
	g.claimSquare(s.claim, c[0].ox, c[0].oy, 1)
	for t := 0; ; t++ {
		if t == pfTries {
			return c, false
		}
		phi := 2 * math.Pi * r.Float64()
		x := int(pfRound(float64(c[0].ox) + g.seedDist*math.Cos(phi)))
		y := int(pfRound(float64(c[0].oy) + g.seedDist*math.Sin(phi)))
		if g.squareFree(s.claim, x, y, 2) {
			c[1] = pfContour{id: 2, ox: x, oy: y}
			break
		}
	}
	g.claimSquare(s.claim, c[1].ox, c[1].oy, 2)
	// Draw the two contours in a random order, so that neither is favoured.
	first := r.IntN(2)
	for k := range 2 {
		ci := &c[(first+k)%2]
		ok := false
		for range pfTries {
			if ci.ex, ci.ey, ok = g.walk(s, ci.id, ci.ox, ci.oy, g.contour, true); ok {
				break
			}
		}
		if !ok {
			return c, false
		}
		g.commit(s, s.cand, ci.id)
		g.claimSquare(s.claim, ci.ex, ci.ey, ci.id)
	}
	for j := range g.distractors {
		id, ok := uint8(3+j), false
		for range pfTries {
			x, y := r.IntN(g.side), r.IntN(g.side)
			if s.claim[y*g.side+x] != 0 {
				continue // the first dash covers its origin
			}
			if _, _, ok = g.walk(s, id, x, y, g.distractor, false); ok {
				break
			}
		}
		if !ok {
			return c, false
		}
		g.commit(s, s.cand, id)
	}
	return c, true
}

// walk draws a contour of n dashes from (x0, y0) into s.cand and s.steps.
// Each dash must lie on pixels that no other contour claims and stay more
// than the gap bound from the contour's own dashes but the previous one;
// with marked, the origin's marker square counts as part of the first dash
// and the last dash must leave room for the far end's marker square. A
// dash that fails pfTries draws takes the previous one back. walk returns
// the far end's pixel, or false when the first dash fails pfTries draws or
// pfBudget·n draws were not enough.
func (g *pfGeom) walk(s *pfScratch, id uint8, x0, y0, n int, marked bool) (ex, ey int, ok bool) {
	r := s.rng
	s.cand, s.steps = s.cand[:0], s.steps[:0]
	s.fails = append(s.fails[:0], make([]int, n)...)
	for budget := pfBudget * n; len(s.steps) < n; budget-- {
		if budget == 0 {
			return 0, 0, false
		}
		d := len(s.steps)
		var x, y, ux, uy float64
		if d == 0 {
			x, y = float64(x0), float64(y0)
			uy, ux = math.Sincos(2 * math.Pi * r.Float64())
		} else {
			p := s.steps[d-1]
			x, y = p.x, p.y
			ux, uy = pfTurn(r, p.ux, p.uy)
		}
		start := len(s.cand)
		s.cand, x, y = g.dash(s.cand, x, y, ux, uy, d == 0)
		if g.fits(s, id, start, x0, y0, marked) {
			level := pfLevel(r)
			for i := start; i < len(s.cand); i++ {
				s.cand[i].level = level
			}
			s.steps = append(s.steps, pfStep{len(s.cand), x, y, ux, uy})
			continue
		}
		s.cand = s.cand[:start]
		for s.fails[d]++; s.fails[d] == pfTries; s.fails[d]++ {
			if d == 0 {
				return 0, 0, false
			}
			s.fails[d] = 0
			d--
			s.steps = s.steps[:d]
			s.cand = s.cand[:s.cand0(d)]
		}
	}
	last := s.steps[n-1]
	return int(pfRound(last.x)), int(pfRound(last.y)), true
}

// cand0 is where the blocks of dash d of the contour being drawn start.
func (s *pfScratch) cand0(d int) int {
	if d == 0 {
		return 0
	}
	return s.steps[d-1].end
}

// fits reports whether the dash in s.cand[start:], dash len(s.steps) of
// the contour being drawn from (x0, y0), may be placed (see walk).
func (g *pfGeom) fits(s *pfScratch, id uint8, start, x0, y0 int, marked bool) bool {
	d, dash := len(s.steps), s.cand[start:]
	if !g.free(s.claim, dash, id) {
		return false
	}
	if d >= 2 {
		own := s.cand[:s.steps[d-2].end]
		for _, b := range dash {
			if g.near(own, int(b.x), int(b.y), int(b.x)+g.w-1, int(b.y)+g.w-1) ||
				marked && g.nearSquare(x0, y0, int(b.x), int(b.y), int(b.x)+g.w-1, int(b.y)+g.w-1) {
				return false
			}
		}
	}
	if !marked || d < g.contour-1 {
		return true
	}
	// The far end's marker square: free, and away from the origin's
	// square and from the dashes before the previous one.
	m := g.mark
	last := dash[len(dash)-1]
	ex, ey := int(last.x)+g.hw, int(last.y)+g.hw
	if !g.squareFree(s.claim, ex, ey, id) || g.nearSquare(x0, y0, ex-m, ey-m, ex+m, ey+m) {
		return false
	}
	return d < 3 || !g.near(s.cand[:s.steps[d-3].end], ex-m, ey-m, ex+m, ey+m)
}

// near reports whether a block of bs lies within the gap bound of the box
// [x0, x1]×[y0, y1].
func (g *pfGeom) near(bs []pfBlock, x0, y0, x1, y1 int) bool {
	for _, b := range bs {
		bx, by := int(b.x), int(b.y)
		if max(bx-x1, x0-(bx+g.w-1), by-y1, y0-(by+g.w-1)) <= g.bound {
			return true
		}
	}
	return false
}

// nearSquare reports whether the marker square centred on (cx, cy) lies
// within the gap bound of the box [x0, x1]×[y0, y1].
func (g *pfGeom) nearSquare(cx, cy, x0, y0, x1, y1 int) bool {
	m := g.mark
	return max(cx-m-x1, x0-(cx+m), cy-m-y1, y0-(cy+m)) <= g.bound
}

// dash appends to dst the blocks of a dash with heading (ux, uy) that starts
// at (x, y) when first, else one gap on from the previous dash's last
// sample (x, y); it returns dst and the dash's last sample. Samples step by
// one pixel along the major axis, on which their coordinate stays an
// integer, so the lit pixels of consecutive dashes are exactly gapPx+1
// apart along it.
func (g *pfGeom) dash(dst []pfBlock, x, y, ux, uy float64, first bool) ([]pfBlock, float64, float64) {
	if math.Abs(ux) >= math.Abs(uy) {
		ux, uy = math.Copysign(1, ux), uy/math.Abs(ux)
		x = float64(pfRound(x))
	} else {
		ux, uy = ux/math.Abs(uy), math.Copysign(1, uy)
		y = float64(pfRound(y))
	}
	if !first {
		step := float64(g.gapPx + g.w)
		x, y = x+step*ux, y+step*uy
	}
	n := g.dashPx - g.w
	for t := range n + 1 {
		sx, sy := x+float64(t)*ux, y+float64(t)*uy
		dst = append(dst, pfBlock{pfRound(sx) - int32(g.hw), pfRound(sy) - int32(g.hw), 0})
	}
	return dst, x + float64(n)*ux, y + float64(n)*uy
}

// free reports whether every block lies inside the image on pixels that no
// contour other than id claims.
func (g *pfGeom) free(claim []uint8, bs []pfBlock, id uint8) bool {
	n, w := int32(g.side), int32(g.w)
	for _, b := range bs {
		if b.x < 0 || b.y < 0 || b.x+w > n || b.y+w > n {
			return false
		}
		for y := b.y; y < b.y+w; y++ {
			for _, c := range claim[y*n+b.x : y*n+b.x+w] {
				if c != 0 && c != id {
					return false
				}
			}
		}
	}
	return true
}

// squareFree reports whether the marker square centred on (x, y) lies
// inside the image on pixels that no contour other than id claims.
func (g *pfGeom) squareFree(claim []uint8, x, y int, id uint8) bool {
	m := g.mark
	if x < m || y < m || x+m >= g.side || y+m >= g.side {
		return false
	}
	for yy := y - m; yy <= y+m; yy++ {
		for _, c := range claim[yy*g.side+x-m : yy*g.side+x+m+1] {
			if c != 0 && c != id {
				return false
			}
		}
	}
	return true
}

// commit claims the pixels within the gap bound of the blocks for id and
// adds the blocks to the image.
func (g *pfGeom) commit(s *pfScratch, bs []pfBlock, id uint8) {
	b0, w := g.bound, g.w
	for _, b := range bs {
		x, y := int(b.x), int(b.y)
		g.claimBox(s.claim, x-b0, y-b0, x+w-1+b0, y+w-1+b0, id)
	}
	s.blocks = append(s.blocks, bs...)
}

// claimSquare reserves the marker square centred on (x, y) for id.
func (g *pfGeom) claimSquare(claim []uint8, x, y int, id uint8) {
	d := g.mark + g.bound
	g.claimBox(claim, x-d, y-d, x+d, y+d, id)
}

// claimBox claims the pixels of [x0, x1]×[y0, y1] inside the image for id.
func (g *pfGeom) claimBox(claim []uint8, x0, y0, x1, y1 int, id uint8) {
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, g.side-1), min(y1, g.side-1)
	for y := y0; y <= y1; y++ {
		row := claim[y*g.side+x0 : y*g.side+x1+1]
		for i, c := range row {
			if c == 0 {
				row[i] = id
			} else if c != id {
				row[i] = pfMulti
			}
		}
	}
}

// paint writes the image: background 0, the dashes, and the two markers
// centred on (ax, ay) and (bx, by).
func (g *pfGeom) paint(dst []int32, blocks []pfBlock, ax, ay, bx, by int) {
	clear(dst)
	n := g.side
	for _, b := range blocks {
		for y := int(b.y); y < int(b.y)+g.w; y++ {
			row := dst[y*n+int(b.x) : y*n+int(b.x)+g.w]
			for i := range row {
				row[i] = b.level
			}
		}
	}
	m := g.mark
	for _, c := range [2][2]int{{ax, ay}, {bx, by}} {
		for y := c[1] - m; y <= c[1]+m; y++ {
			row := dst[y*n+c[0]-m : y*n+c[0]+m+1]
			for i := range row {
				row[i] = PathfinderMarker
			}
		}
	}
}
