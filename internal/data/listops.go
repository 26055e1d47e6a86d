package data

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
)

// ListOps token ids. Digit v is token ListOpsDigit+v.
const (
	ListOpsPad   = 0
	ListOpsDigit = 1 // 1..10 are the digits 0..9
	ListOpsMin   = 11
	ListOpsMax   = 12
	ListOpsMed   = 13
	ListOpsSM    = 14
	ListOpsClose = 15
	ListOpsVocab = 16
)

var listOpsNames = [ListOpsVocab]string{"<pad>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"}

// ListOpsConfig sets the sizes and bounds of a ListOps dataset. The zero
// values of the fields take the defaults noted (LRA's).
type ListOpsConfig struct {
	Train int `json:"train"` // 96000
	Val   int `json:"val"`   // 2000
	Test  int `json:"test"`  // 2000
	// MinLen and MaxLen are exclusive bounds on a tree's token count.
	MinLen int `json:"min_len"` // 500
	MaxLen int `json:"max_len"` // 2000
	// MaxDepth is the depth at which every node is a leaf; MaxArgs the
	// largest operator arity (arity is uniform in [2, MaxArgs]).
	MaxDepth int    `json:"max_depth"` // 10
	MaxArgs  int    `json:"max_args"`  // 10
	Seed     uint64 `json:"seed"`      // 0
}

func (c *ListOpsConfig) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Train, 96000)
	def(&c.Val, 2000)
	def(&c.Test, 2000)
	def(&c.MinLen, 500)
	def(&c.MaxLen, 2000)
	def(&c.MaxDepth, 10)
	def(&c.MaxArgs, 10)
}

// ListOps is the LRA ListOps task: classify the value (0–9) of a nested
// expression such as "[MAX 2 9 [MIN 4 7 ] 0 ]".
//
// Generation follows LRA's listops.py exactly in distribution: a tree is
// grown from depth 1; below MaxDepth a node draws r uniform in [0,1) (at
// MaxDepth r = 1); r > 0.25 makes a leaf holding a uniform digit, otherwise
// the node takes 2–MaxArgs children (uniform), grown at depth+1, and a
// uniform operator of [MIN, [MAX, [MED (median, floor of the mean of the two
// middle values for an even count) and [SM (sum mod 10). A node contributes
// its operator and a "]" token, a leaf its digit. Trees whose token count is
// not strictly between MinLen and MaxLen are rejected (growth stops as soon
// as MaxLen is reached, which rejects the same trees, only faster), as are
// duplicates. The first Train distinct trees form the train split, the next
// Val the validation split, then Test.
type ListOps struct {
	cfg    ListOpsConfig
	toks   []uint8   // all examples' tokens, concatenated
	off    [3][]int  // per split: start offsets into toks, plus the end
	labels [3][]int8 // per split
}

// NewListOps generates a ListOps dataset. It returns a KeyError for invalid
// sizes or bounds.
func NewListOps(c ListOpsConfig) (*ListOps, error) {
	c.defaults()
	if err := checkSplits("listops", c.Train, c.Val, c.Test); err != nil {
		return nil, err
	}
	switch {
	case c.MinLen < 1:
		return nil, keyErr("listops", "min_len", "want ≥ 1, got %d", c.MinLen)
	case c.MaxLen <= c.MinLen+1:
		return nil, keyErr("listops", "max_len", "want > min_len+1 (%d), got %d", c.MinLen+1, c.MaxLen)
	case c.MaxDepth < 2:
		return nil, keyErr("listops", "max_depth", "want ≥ 2, got %d", c.MaxDepth)
	case c.MaxArgs < 2:
		return nil, keyErr("listops", "max_args", "want ≥ 2, got %d", c.MaxArgs)
	}
	l := &ListOps{cfg: c}
	g := listOpsGen{
		r:        rand.New(rand.NewPCG(c.Seed, 0x4c6973744f7073)), // "ListOps"
		maxDepth: c.MaxDepth, maxArgs: c.MaxArgs, maxLen: c.MaxLen,
	}
	seen := map[[2]uint64]bool{}
	sizes := [3]int{c.Train, c.Val, c.Test}
	h := fnv.New128a()
	for s := range 3 {
		l.off[s] = []int{len(l.toks)}
		for len(l.labels[s]) < sizes[s] {
			g.buf = g.buf[:0]
			v, ok := g.tree(1)
			if !ok || len(g.buf) <= c.MinLen {
				continue
			}
			h.Reset()
			h.Write(g.buf)
			var sum [16]byte
			h.Sum(sum[:0])
			key := [2]uint64{be64(sum[:8]), be64(sum[8:])}
			if seen[key] {
				continue
			}
			seen[key] = true
			l.toks = append(l.toks, g.buf...)
			l.off[s] = append(l.off[s], len(l.toks))
			l.labels[s] = append(l.labels[s], int8(v))
		}
	}
	return l, nil
}

func be64(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

type listOpsGen struct {
	r                         *rand.Rand
	maxDepth, maxArgs, maxLen int
	buf                       []uint8
	vals                      []int // stack of child values
}

// tree appends one (sub)tree at depth to g.buf and returns its value; ok is
// false once the token count has reached maxLen (the tree is then rejected).
func (g *listOpsGen) tree(depth int) (v int, ok bool) {
	r := 1.0
	if depth < g.maxDepth {
		r = g.r.Float64()
	}
	if r > 0.25 {
		v = g.r.IntN(10)
		g.buf = append(g.buf, uint8(ListOpsDigit+v))
		return v, len(g.buf) < g.maxLen
	}
	n := 2 + g.r.IntN(g.maxArgs-1)
	at := len(g.buf)
	g.buf = append(g.buf, 0) // the operator, drawn after the children as in LRA
	base := len(g.vals)
	for range n {
		cv, ok := g.tree(depth + 1)
		if !ok {
			g.vals = g.vals[:base]
			return 0, false
		}
		g.vals = append(g.vals, cv)
	}
	op := ListOpsMin + g.r.IntN(4)
	g.buf[at] = uint8(op)
	g.buf = append(g.buf, ListOpsClose)
	v = listOpsApply(op, g.vals[base:])
	g.vals = g.vals[:base]
	return v, len(g.buf) < g.maxLen
}

// listOpsApply applies operator token op to args. It sorts args in place
// for [MED.
func listOpsApply(op int, args []int) int {
	switch op {
	case ListOpsMin:
		return slices.Min(args)
	case ListOpsMax:
		return slices.Max(args)
	case ListOpsMed:
		slices.Sort(args)
		n := len(args)
		if n%2 == 1 {
			return args[n/2]
		}
		return (args[n/2-1] + args[n/2]) / 2 // floor: values are ≥ 0
	case ListOpsSM:
		s := 0
		for _, a := range args {
			s += a
		}
		return s % 10
	}
	panic(fmt.Sprintf("data: bad ListOps operator %d", op))
}

// ListOpsEval evaluates a ListOps token sequence and returns its value. It
// returns an error if the sequence is not exactly one well-formed expression.
func ListOpsEval(toks []int32) (int, error) {
	type frame struct {
		op   int
		args []int
	}
	var st []frame
	var top []int // the values at top level
	push := func(v int) {
		if len(st) == 0 {
			top = append(top, v)
		} else {
			st[len(st)-1].args = append(st[len(st)-1].args, v)
		}
	}
	for i, t := range toks {
		switch {
		case t >= ListOpsDigit && t < ListOpsDigit+10:
			push(int(t - ListOpsDigit))
		case t >= ListOpsMin && t <= ListOpsSM:
			st = append(st, frame{op: int(t)})
		case t == ListOpsClose:
			if len(st) == 0 {
				return 0, fmt.Errorf("listops: unmatched ] at %d", i)
			}
			f := st[len(st)-1]
			st = st[:len(st)-1]
			if len(f.args) == 0 {
				return 0, fmt.Errorf("listops: operator with no arguments closed at %d", i)
			}
			push(listOpsApply(f.op, f.args))
		default:
			return 0, fmt.Errorf("listops: bad token %d at %d", t, i)
		}
	}
	if len(st) > 0 {
		return 0, fmt.Errorf("listops: %d unclosed operator(s)", len(st))
	}
	if len(top) != 1 {
		return 0, fmt.Errorf("listops: want one expression, got %d values", len(top))
	}
	return top[0], nil
}

// ListOpsParse turns a space-separated expression such as "[MAX 2 [SM 3 9 ] ]"
// into tokens. It returns an error for an unknown word.
func ListOpsParse(s string) ([]int32, error) {
	var out []int32
	for _, w := range strings.Fields(s) {
		i := slices.Index(listOpsNames[:], w)
		if i <= ListOpsPad {
			return nil, fmt.Errorf("listops: unknown token %q", w)
		}
		out = append(out, int32(i))
	}
	return out, nil
}

// ListOpsString is the inverse of ListOpsParse.
func ListOpsString(toks []int32) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		if t >= 0 && int(t) < ListOpsVocab {
			b.WriteString(listOpsNames[t])
		} else {
			fmt.Fprintf(&b, "<%d>", t)
		}
	}
	return b.String()
}

// Info implements Task.
func (l *ListOps) Info() Info {
	return Info{Name: "listops", Mode: Classify, Vocab: ListOpsVocab, Classes: 10,
		Chance: l.majorityShare(), PadID: ListOpsPad, MaxLen: l.cfg.MaxLen - 1, Metric: Accuracy,
		LabelNames: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}}
}

// majorityShare is the share of the training split's most frequent class:
// the accuracy of always guessing it (ListOps's classes are not balanced).
func (l *ListOps) majorityShare() float64 {
	var counts [10]int
	for _, y := range l.labels[Train] {
		counts[y]++
	}
	if len(l.labels[Train]) == 0 {
		return 0.1
	}
	return float64(slices.Max(counts[:])) / float64(len(l.labels[Train]))
}

// Config returns the resolved configuration (defaults filled in).
func (l *ListOps) Config() ListOpsConfig { return l.cfg }

// Len implements Task.
func (l *ListOps) Len(s Split) int { return len(l.labels[s]) }

// ExampleLen implements Task.
func (l *ListOps) ExampleLen(s Split, i int) int { return l.off[s][i+1] - l.off[s][i] }

// Example implements Task.
func (l *ListOps) Example(tokens, targets []int32, s Split, i int) {
	src := l.toks[l.off[s][i]:l.off[s][i+1]]
	for j, t := range src {
		tokens[j] = int32(t)
	}
	targets[0] = int32(l.labels[s][i])
}

// Baselines returns lookup-table classifiers fitted on the train split and
// scored on the test split: the majority class; the root operator alone
// (the most frequent label per root operator, the first token); and the
// root operator with its first argument (the second token when it is a
// digit, else "a subtree"). They show what a model gets from the start of
// the sequence alone, without evaluating any subtree: on LRA's lengths the
// root operator alone is worth about 37%, as much as LRA's published
// Transformer (36.37%).
func (l *ListOps) Baselines() []Baseline {
	keys := []struct {
		name, note string
		key        func(toks []uint8) int
	}{
		{"majority class", "lookup table: the most frequent train label", func([]uint8) int { return 0 }},
		{"root operator", "lookup table: the most frequent train label per root operator (token 1)",
			func(t []uint8) int { return int(t[0]) }},
		{"root operator + first argument", "lookup table per root operator and token 2 when a digit (else \"subtree\")",
			func(t []uint8) int {
				a := ListOpsVocab // a subtree
				if len(t) > 1 && t[1] < ListOpsMin {
					a = int(t[1])
				}
				return int(t[0])*(ListOpsVocab+1) + a
			}},
	}
	var out []Baseline
	for _, k := range keys {
		counts := map[int]*[10]int{}
		for i := range l.labels[Train] {
			kk := k.key(l.toks[l.off[Train][i]:l.off[Train][i+1]])
			if counts[kk] == nil {
				counts[kk] = new([10]int)
			}
			counts[kk][l.labels[Train][i]]++
		}
		correct := 0
		for i, y := range l.labels[Test] {
			c := counts[k.key(l.toks[l.off[Test][i]:l.off[Test][i+1]])]
			if c == nil {
				continue // a key never seen in training: no prediction
			}
			if slices.Index(c[:], slices.Max(c[:])) == int(y) { // the smallest label among the most frequent
				correct++
			}
		}
		b := Baseline{Name: k.name, Note: k.note}
		if n := len(l.labels[Test]); n > 0 {
			b.Accuracy = float64(correct) / float64(n)
		}
		out = append(out, b)
	}
	return out
}
