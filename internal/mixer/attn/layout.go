package attn

// Block is a rectangle of query–key pairs that the kernels visit as one
// tile. Its query rows are the positions Q0 + a·QS for a < NQ and its key
// columns the positions K0 + c·KS for c < NK: an arithmetic progression, so a
// block of the Sparse Transformer's strided pattern (keys i, i−l, i−2l, …) is
// a plain strided matrix and needs no gather.
type Block struct {
	Q0, QS, NQ int
	K0, KS, NK int
	// Diag marks a block whose only pairs are (Q0+a·QS, K0+a·KS); NQ == NK.
	Diag bool
	// Gathered marks a block whose key indices K0 + c·KS index the
	// layout's Gather list rather than positions: the kernels read those
	// keys from compact gathered copies.
	Gathered bool
	// Mask, when not nil, holds NQ×NK bits row-major (bit a·NK+c): the
	// allowed pairs of a partial block. nil means every pair is allowed.
	Mask []uint64
}

// Allowed reports whether pair (a, c) of the block (row a, column c) is
// visited.
func (b *Block) Allowed(a, c int) bool {
	if b.Diag {
		return a == c
	}
	if b.Mask == nil {
		return true
	}
	n := a*b.NK + c
	return b.Mask[n>>6]>>(n&63)&1 != 0
}

// Group is a list of blocks that share one set of query rows. A group is one
// unit of work in the forward pass: it owns the online-softmax state of its
// rows.
type Group struct {
	Blocks []Block
	Cost   int // Σ NQ·NK (Diag blocks count NQ)
}

// Phase is a list of groups with pairwise disjoint query rows, so they may
// run concurrently. Phases run one after the other; a query may appear in
// several phases (e.g. a local band, then strided keys in permuted order).
type Phase struct {
	Groups []Group
}

// Layout is a block-sparse attention layout for one head at one length T:
// every allowed (query, key) pair lies in exactly one block.
type Layout struct {
	T      int
	Phases []Phase
	// MaxNQ and MaxNK bound the block sizes (for scratch tiles).
	MaxNQ, MaxNK int
	// Cost is Σ NQ·NK over all blocks: the number of scores computed.
	Cost int
	// Gather lists the key positions (ascending) that Gathered blocks index.
	Gather []int
	// Contig says some block has contiguous keys (KS = 1, not Diag), and
	// Stride is the key stride of the blocks with KS > 1 (0 if none, −1 if
	// they differ): the kernels then read that head's keys from transposed
	// copies (see transpose.go).
	Contig bool
	Stride int
	// Panels says every block with contiguous keys starts at a multiple
	// of PanelCols and has at most PanelCols keys, so the kernels may keep
	// that head's natural transposed copies in panels (see transpose.go).
	Panels bool
}

// PanelCols is the column width of a panel of a transposed copy: the
// AVX-512 GEMM's panel width, so that a block of a panel's keys is already
// one packed panel of the score product's B operand.
const PanelCols = 64

// Each calls fn(i, j) for every allowed pair of l, in block order.
func (l *Layout) Each(fn func(i, j int)) {
	for _, ph := range l.Phases {
		for _, g := range ph.Groups {
			for bi := range g.Blocks {
				b := &g.Blocks[bi]
				for a := 0; a < b.NQ; a++ {
					for c := 0; c < b.NK; c++ {
						if b.Allowed(a, c) {
							fn(b.Q0+a*b.QS, l.keyPos(b, c))
						}
					}
				}
			}
		}
	}
}

// keyPos is the position of key c of block b.
func (l *Layout) keyPos(b *Block, c int) int {
	if b.Gathered {
		return l.Gather[b.K0+c*b.KS]
	}
	return b.K0 + c*b.KS
}

// Pairs returns the number of allowed pairs of l.
func (l *Layout) Pairs() int {
	n := 0
	l.Each(func(int, int) { n++ })
	return n
}

// Builder assembles a Layout phase by phase and group by group.
type Builder struct {
	l *Layout
	// offPanel: some block with contiguous keys crosses a panel boundary.
	offPanel bool
}

// NewBuilder starts an empty layout for length T.
func NewBuilder(T int) *Builder { return &Builder{l: &Layout{T: T}} }

// SetGather sets the positions that Gathered blocks index (ascending). It
// panics if a position is outside [0,T) or the list is not increasing.
func (b *Builder) SetGather(g []int) {
	for i, j := range g {
		if j < 0 || j >= b.l.T || i > 0 && j <= g[i-1] {
			panic("attn: gather list not increasing in [0,T)")
		}
	}
	b.l.Gather = g
}

// Phase starts a new phase.
func (b *Builder) Phase() { b.l.Phases = append(b.l.Phases, Phase{}) }

// Group starts a new group in the current phase. Group panics if no phase
// was started.
func (b *Builder) Group() {
	ph := &b.l.Phases[len(b.l.Phases)-1]
	ph.Groups = append(ph.Groups, Group{})
}

// Add appends blk to the current group. If allow is nil the caller promises
// every pair of blk is allowed; otherwise allow(i, j) (on positions) decides
// each pair, and the block is dropped when none is allowed and stored without
// a mask when all are. Add panics if no group was started or blk leaves [0,T).
func (b *Builder) Add(blk Block, allow func(i, j int) bool) {
	if blk.NQ <= 0 || blk.NK <= 0 {
		return
	}
	T := b.l.T
	nk := T
	if blk.Gathered {
		nk = len(b.l.Gather)
	}
	if blk.Q0 < 0 || blk.K0 < 0 || blk.Q0+(blk.NQ-1)*blk.QS >= T || blk.K0+(blk.NK-1)*blk.KS >= nk {
		panic("attn: block outside [0,T) or the gather list")
	}
	if blk.Diag && (blk.NQ != blk.NK || blk.Gathered) {
		panic("attn: diagonal block not square or gathered")
	}
	if allow != nil && blk.Diag {
		// Shrink a diagonal block to its allowed runs.
		start := -1
		for a := 0; a <= blk.NQ; a++ {
			ok := a < blk.NQ && allow(blk.Q0+a*blk.QS, blk.K0+a*blk.KS)
			if ok && start < 0 {
				start = a
			}
			if !ok && start >= 0 {
				d := blk
				d.Q0 += start * blk.QS
				d.K0 += start * blk.KS
				d.NQ, d.NK = a-start, a-start
				b.Add(d, nil)
				start = -1
			}
		}
		return
	}
	if allow != nil {
		mask, n := maskOf(blk.NQ, blk.NK, func(a, c int) bool { return allow(blk.Q0+a*blk.QS, b.l.keyPos(&blk, c)) })
		switch n {
		case 0:
			return
		case blk.NQ * blk.NK:
			mask = nil
		}
		blk.Mask = mask
		if mask != nil {
			blk = trimRows(blk)
		}
	}
	ph := &b.l.Phases[len(b.l.Phases)-1]
	g := &ph.Groups[len(ph.Groups)-1]
	g.Blocks = append(g.Blocks, blk)
	cost := blk.NQ * blk.NK
	if blk.Diag {
		cost = blk.NQ
	}
	g.Cost += cost
	b.l.Cost += cost
	b.l.MaxNQ = max(b.l.MaxNQ, blk.NQ)
	b.l.MaxNK = max(b.l.MaxNK, blk.NK)
	if blk.KS == 1 && !blk.Diag && !blk.Gathered {
		b.l.Contig = true
		b.offPanel = b.offPanel || blk.K0%PanelCols != 0 || blk.NK > PanelCols
	}
	if blk.KS > 1 && !blk.Diag && !blk.Gathered && blk.NK > 1 {
		switch b.l.Stride {
		case 0:
			b.l.Stride = blk.KS
		case blk.KS:
		default:
			b.l.Stride = -1
		}
	}
}

// trimRows drops the leading and trailing rows of a masked block that
// allow no key, so that no score of theirs is computed: the leading ones in
// pairs, keeping the parity of Q0 (bf16 packs rows in pairs, see bf16.go).
func trimRows(blk Block) Block {
	rowEmpty := func(a int) bool {
		for c := 0; c < blk.NK; c++ {
			if blk.Allowed(a, c) {
				return false
			}
		}
		return true
	}
	lo, hi := 0, blk.NQ
	for lo < hi && rowEmpty(lo) {
		lo++
	}
	lo &^= 1
	for hi > lo && rowEmpty(hi-1) {
		hi--
	}
	if lo == 0 && hi == blk.NQ {
		return blk
	}
	t := blk
	t.Q0 += lo * blk.QS
	t.NQ = hi - lo
	var n int
	t.Mask, n = maskOf(t.NQ, t.NK, func(a, c int) bool { return blk.Allowed(lo+a, c) })
	if n == t.NQ*t.NK {
		t.Mask = nil
	}
	return t
}

// maskOf returns the nq×nk bit mask (bit a·nk+c) of the pairs ok allows,
// and their number.
func maskOf(nq, nk int, ok func(a, c int) bool) ([]uint64, int) {
	mask := make([]uint64, (nq*nk+63)/64)
	n := 0
	for a := 0; a < nq; a++ {
		for c := 0; c < nk; c++ {
			if ok(a, c) {
				e := a*nk + c
				mask[e>>6] |= 1 << (e & 63)
				n++
			}
		}
	}
	return mask, n
}

// Layout returns the finished layout, dropping empty groups and phases.
func (b *Builder) Layout() *Layout {
	l := b.l
	var phs []Phase
	for _, ph := range l.Phases {
		var gs []Group
		for _, g := range ph.Groups {
			if len(g.Blocks) > 0 {
				gs = append(gs, g)
			}
		}
		if len(gs) > 0 {
			phs = append(phs, Phase{Groups: gs})
		}
	}
	l.Phases = phs
	l.Panels = l.Contig && !b.offPanel
	return l
}

// Dense returns the layout of full attention at length T with blocks of
// t.Q queries by t.K keys: every key tile at or before the query tile when
// causal (tiles crossing the diagonal masked by j ≤ i), every key tile
// otherwise. Dense panics if a tile side is < 1.
func Dense(T int, t Tiles, causal bool) *Layout {
	if t.Q < 1 || t.K < 1 {
		panic("attn: tile side < 1")
	}
	b := NewBuilder(T)
	b.Phase()
	for i0 := 0; i0 < T; i0 += t.Q {
		nq := min(t.Q, T-i0)
		b.Group()
		for j0 := 0; j0 < T; j0 += t.K {
			nk := min(t.K, T-j0)
			blk := Block{Q0: i0, QS: 1, NQ: nq, K0: j0, KS: 1, NK: nk}
			switch {
			case !causal || j0+nk-1 <= i0:
				b.Add(blk, nil)
			case j0 <= i0+nq-1:
				b.Add(blk, func(i, j int) bool { return j <= i })
			}
		}
	}
	return b.Layout()
}
