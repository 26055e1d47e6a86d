package sparse

import (
	"sort"
	"sync"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
)

// set names the index set a head uses.
type set int

const (
	setA1    set = iota + 1 // A1 (local block or band)
	setA2                   // A2 (strided or summary positions), plus the query itself
	setMerge                // A1 ∪ A2
)

// Pattern is a Sparse Transformer pattern for one layer: strided or fixed,
// its stride L (and summary size C for fixed), causal or not, and how the
// two index sets are combined over heads and layers. It implements
// attn.Pattern; layouts are built once per (pattern, set, T, tiles) and
// shared by every layer and mixer in the process (they are immutable).
type Pattern struct {
	Fixed   bool
	L, C    int
	Causal  bool
	Combine string
	Heads   int
	Layer   int
	// Slopes are the ALiBi slopes of option "alibi" (nil without it);
	// they bias scores, not the pattern.
	Slopes []float64
	// Rope is option "rope"'s rotation of q and k (nil without it).
	Rope *attn.Rope
}

// layoutKey identifies a layout: the pattern's parameters that shape it.
type layoutKey struct {
	fixed, causal bool
	l, c          int
	s             set
	T, tq, tk     int
}

var (
	cacheMu sync.Mutex
	cache   = map[layoutKey]*attn.Layout{}
)

// set returns the index set of head h.
func (p *Pattern) set(h int) set {
	switch p.Combine {
	case Heads:
		if h < p.Heads/2 {
			return setA1
		}
		return setA2
	case Interleave:
		if p.Layer%2 == 0 {
			return setA1
		}
		return setA2
	}
	return setMerge
}

// a1 reports whether j ∈ A1(i).
func (p *Pattern) a1(i, j int) bool {
	if p.Causal && j > i {
		return false
	}
	if p.Fixed {
		return j/p.L == i/p.L
	}
	return i-j <= p.L && j-i <= p.L
}

// a2 reports whether j ∈ A2(i).
func (p *Pattern) a2(i, j int) bool {
	if p.Causal && j > i {
		return false
	}
	if p.Fixed {
		return j%p.L >= p.L-p.C
	}
	return (i-j)%p.L == 0
}

// Allow reports whether query i may attend to key j in head h: j = i, or j
// in the head's index set(s).
func (p *Pattern) Allow(h, T, i, j int) bool {
	if i == j {
		return true
	}
	switch p.set(h) {
	case setA1:
		return p.a1(i, j)
	case setA2:
		return p.a2(i, j)
	}
	return p.a1(i, j) || p.a2(i, j)
}

// CausalKeys appends the keys j ≤ i that query i of head h may attend to,
// ascending (attn.KeyLister): the query itself, its set A1 (the last L+1
// positions for strided, its own block for fixed) and A2 (every L-th
// position back for strided, each block's last C positions for fixed). It
// visits O(L + i/L) positions for strided, O(L + C·i/L) for fixed.
func (p *Pattern) CausalKeys(h, i int, dst []int) []int {
	s := p.set(h)
	lo1 := max(i-p.L, 0) // A1 of strided: i−L … i
	if p.Fixed {
		lo1 = i / p.L * p.L
	}
	for j := 0; j < lo1 && s != setA1; j++ { // A2 below A1's range
		if p.Fixed {
			if j%p.L < p.L-p.C { // jump to this block's summary
				j = j/p.L*p.L + p.L - p.C - 1
				continue
			}
		} else if (i-j)%p.L != 0 {
			j += (i-j)%p.L - 1 // jump to the next position ≡ i (mod L)
			continue
		}
		dst = append(dst, j)
	}
	for j := lo1; j <= i; j++ {
		if j == i || s != setA2 || p.a2(i, j) {
			dst = append(dst, j)
		}
	}
	return dst
}

// Layout returns head h's block layout at length T (cached).
func (p *Pattern) Layout(h, T int, t attn.Tiles) *attn.Layout {
	s := p.set(h)
	key := layoutKey{fixed: p.Fixed, causal: p.Causal, l: p.L, s: s, T: T, tq: t.Q, tk: t.K}
	if p.Fixed {
		key.c = p.C
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if l, ok := cache[key]; ok {
		return l
	}
	l := p.build(s, T, t.Q, t.K)
	cache[key] = l
	return l
}

// build makes the layout of set s. Every allowed pair lands in exactly one
// block: A1 (with the query itself) in one phase; then A2, minus A1 when
// merging; then, for A2 alone, the queries that are not in their own A2
// (fixed's non-summary positions) on a diagonal.
func (p *Pattern) build(s set, T, tq, tk int) *attn.Layout {
	b := attn.NewBuilder(T)
	all := prog{0, 1, T}
	l := p.L
	// Bands and causal diagonals waste less in square tiles; the summary
	// keys of fixed's A2 are a staircase that tall query tiles follow well.
	sq := min(tq, tk)
	if s == setA1 || s == setMerge {
		b.Phase()
		if p.Fixed {
			cover(b, all, []prog{all}, min(tq, l), min(tk, l), func(i0, i1 int) (int, int) {
				hi := min(T-1, (i1/l+1)*l-1)
				if p.Causal {
					hi = i1
				}
				return i0 / l * l, hi
			}, func(i, j int) bool { return i == j || p.a1(i, j) })
		} else {
			// A query tile of bq rows computes bq+l keys per row of the
			// band's l+1: short tiles waste less.
			bq := min(sq, max(16, l/2))
			cover(b, all, []prog{all}, bq, sq, func(i0, i1 int) (int, int) {
				if p.Causal {
					return i0 - l, i1
				}
				return i0 - l, i1 + l
			}, func(i, j int) bool { return i == j || p.a1(i, j) })
		}
	}
	if s == setA2 || s == setMerge {
		in := p.a2
		if s == setMerge {
			in = func(i, j int) bool { return p.a2(i, j) && !p.a1(i, j) && i != j }
		}
		b.Phase()
		span := func(i0, i1 int) (int, int) {
			if p.Causal {
				return 0, i1
			}
			return 0, T - 1
		}
		if p.Fixed {
			// Summary keys, gathered: one dense key axis in position order.
			g := p.summary(T)
			b.SetGather(g)
			coverGathered(b, all, g, tq, tk, span, in)
		} else {
			// Residue classes r, r+l, r+2l, …: A2 is dense inside a class
			// (the transpose trick), so each class is tiled on its own.
			for r := 0; r < min(l, T); r++ {
				c := prog{r, l, (T - r + l - 1) / l}
				cover(b, c, []prog{c}, sq, sq, span, in)
			}
		}
		if s == setA2 {
			b.Phase()
			for i0 := 0; i0 < T; i0 += sq {
				b.Group()
				b.Add(attn.Block{Q0: i0, QS: 1, NQ: min(sq, T-i0), K0: i0, KS: 1, NK: min(sq, T-i0), Diag: true},
					func(i, j int) bool { return !p.a2(i, j) })
			}
		}
	}
	return b.Layout()
}

// prog is the arithmetic progression of positions start + a·stride, a < n.
type prog struct{ start, stride, n int }

func (g prog) at(a int) int { return g.start + a*g.stride }

// cover adds to b one group per tile of tq consecutive queries of q and, in
// it, for each key progression k in ks, blocks of at most tk consecutive keys
// of k whose positions lie in span(first, last query position). allow
// decides every pair; blocks without an allowed pair are dropped.
func cover(b *attn.Builder, q prog, ks []prog, tq, tk int, span func(i0, i1 int) (int, int), allow func(i, j int) bool) {
	for a0 := 0; a0 < q.n; a0 += tq {
		nq := min(tq, q.n-a0)
		i0, i1 := q.at(a0), q.at(a0+nq-1)
		jlo, jhi := span(i0, i1)
		b.Group()
		for _, k := range ks {
			mlo := max(0, ceilDiv(jlo-k.start, k.stride))
			mhi := min(k.n-1, floorDiv(jhi-k.start, k.stride))
			for m0 := mlo; m0 <= mhi; m0 += tk {
				nk := min(tk, mhi-m0+1)
				b.Add(attn.Block{Q0: i0, QS: q.stride, NQ: nq, K0: k.at(m0), KS: k.stride, NK: nk}, allow)
			}
		}
	}
}

// summary lists fixed's summary positions j < T (j mod l ≥ l − c).
func (p *Pattern) summary(T int) []int {
	var g []int
	for j := 0; j < T; j++ {
		if j%p.L >= p.L-p.C {
			g = append(g, j)
		}
	}
	return g
}

// GatherLen is the number of summary positions below T for fixed patterns
// with a head using A2, else 0 (attn.Gatherer).
func (p *Pattern) GatherLen(T int) int {
	if !p.Fixed {
		return 0
	}
	for h := 0; h < p.Heads; h++ {
		if p.set(h) != setA1 {
			// The last c positions of every block of l below T.
			return T/p.L*p.C + max(0, T%p.L-(p.L-p.C))
		}
	}
	return 0
}

// coverGathered is cover for keys that are the gather list g: per tile of
// tq queries, blocks of at most tk consecutive entries of g whose positions
// lie in span(first, last query position).
func coverGathered(b *attn.Builder, q prog, g []int, tq, tk int, span func(i0, i1 int) (int, int), allow func(i, j int) bool) {
	for a0 := 0; a0 < q.n; a0 += tq {
		nq := min(tq, q.n-a0)
		i0, i1 := q.at(a0), q.at(a0+nq-1)
		jlo, jhi := span(i0, i1)
		mlo, mhi := sort.SearchInts(g, jlo), sort.SearchInts(g, jhi+1)-1
		b.Group()
		for m0 := mlo; m0 <= mhi; m0 += tk {
			b.Add(attn.Block{Q0: i0, QS: q.stride, NQ: nq, K0: m0, KS: 1, NK: min(tk, mhi-m0+1), Gathered: true}, allow)
		}
	}
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }
