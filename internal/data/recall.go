package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// RecallConfig sets the associative-recall task. Zero fields take the
// defaults noted.
type RecallConfig struct {
	// Len is the sequence length T, query included (256).
	Len int `json:"len"`
	// Pairs is the number of key–value pairs per sequence (16).
	Pairs int `json:"pairs"`
	// Queries is the number of query keys at the end of the sequence (1),
	// each drawn uniformly from the sequence's keys.
	Queries int `json:"queries"`
	// Keys and Values are the sizes of the key and value vocabularies (64
	// and 16); both ≥ Pairs, since a sequence's keys are distinct and so are
	// its values (with repeated values, guessing the sequence's most
	// frequent value is a shortcut that beats chance without any recall).
	Keys   int `json:"keys"`
	Values int `json:"values"`
	// Train, Val, Test are the split sizes (100000, 1000, 2000).
	Train int    `json:"train"`
	Val   int    `json:"val"`
	Test  int    `json:"test"`
	Seed  uint64 `json:"seed"`
	// Fused writes each pair as one token that encodes both the key and
	// the value (Keys·Values such tokens), so recall is a single
	// content-based lookup instead of a lookup plus a hop to the
	// neighbouring position.
	Fused bool `json:"fused"`
	// Layout places the pairs ("random"): "random" puts them at uniformly
	// random non-overlapping positions among the fillers; "pairs_first"
	// puts them contiguously at the start, so the distance from a pair to
	// its query grows with Len (Zoology's MQAR layout, the long-range
	// case).
	Layout string `json:"layout"`
}

func (c *RecallConfig) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Len, 256)
	def(&c.Pairs, 16)
	def(&c.Queries, 1)
	def(&c.Keys, 64)
	def(&c.Values, 16)
	def(&c.Train, 100000)
	def(&c.Val, 1000)
	def(&c.Test, 2000)
	if c.Layout == "" {
		c.Layout = RecallRandom
	}
}

// Recall layouts (RecallConfig.Layout).
const (
	RecallRandom     = "random"
	RecallPairsFirst = "pairs_first"
)

// Recall token ids: 0 is unused (pad), 1 the filler, then the keys, then the
// values.
const (
	RecallFiller = 1
	RecallKey0   = 2
)

// Recall is synthetic associative recall: a sequence of Len tokens holds
// Pairs adjacent (key, value) pairs with distinct keys among filler tokens
// in the first Len−Queries cells, and ends with Queries query keys, each
// drawn uniformly from those keys. With Layout "random" (the default) the
// pairs sit at uniformly random non-overlapping positions; with
// "pairs_first" they fill cells 0..2·Pairs−1 (0..Pairs−1 when fused), in
// random key order, and the fillers follow, so every query comes at least
// Len−Queries−2·Pairs+1 cells after its pair's value: recall at long range.
// Keys are distinct within a sequence, and so are values. The
// targets are at the query positions only: the value paired with
// each query (accuracy over those targets; chance is 1/Values, and 1/Pairs
// for a model that only learned which values occur). It is framed
// as language modelling with targets at the queries so that every mixer,
// causal or not, can be trained on it: the answers never appear after the
// pairs, so a bidirectional model cannot cheat. Several queries give several
// supervised targets per sequence (as in Zoology's multi-query associative
// recall, Arora et al. 2023), which makes learning much faster.
//
// Example i of split s is generated on demand from a PCG seeded by (Seed,
// s, i), so the splits are disjoint streams and cost no memory.
type Recall struct {
	cfg RecallConfig
}

// NewRecall returns the recall task, or a KeyError for an impossible
// config.
func NewRecall(c RecallConfig) (*Recall, error) {
	c.defaults()
	w := 2 // tokens per pair
	if c.Fused {
		w = 1
	}
	switch {
	case c.Pairs < 1:
		return nil, keyErr("recall", "pairs", "want ≥ 1, got %d", c.Pairs)
	case c.Queries < 1:
		return nil, keyErr("recall", "queries", "want ≥ 1, got %d", c.Queries)
	case w*c.Pairs+c.Queries > c.Len:
		return nil, keyErr("recall", "len", "%d pairs and %d queries need ≥ %d tokens, got %d", c.Pairs, c.Queries, w*c.Pairs+c.Queries, c.Len)
	case c.Keys < c.Pairs:
		return nil, keyErr("recall", "keys", "want ≥ pairs (%d), got %d", c.Pairs, c.Keys)
	case c.Values < c.Pairs:
		return nil, keyErr("recall", "values", "want ≥ pairs (%d), got %d", c.Pairs, c.Values)
	case c.Values < 2:
		return nil, keyErr("recall", "values", "want ≥ 2, got %d", c.Values)
	case c.Layout != RecallRandom && c.Layout != RecallPairsFirst:
		return nil, keyErr("recall", "layout", "want %q or %q, got %q", RecallRandom, RecallPairsFirst, c.Layout)
	}
	if err := checkSplits("recall", c.Train, c.Val, c.Test); err != nil {
		return nil, err
	}
	return &Recall{cfg: c}, nil
}

// Config returns the resolved configuration.
func (r *Recall) Config() RecallConfig { return r.cfg }

// Info implements Task.
func (r *Recall) Info() Info {
	v := RecallKey0 + r.cfg.Keys + r.cfg.Values
	if r.cfg.Fused {
		v += r.cfg.Keys * r.cfg.Values
	}
	// Chance: a model that copies one of the sequence's values at random
	// without recall scores 1/Pairs (≥ 1/Values).
	return Info{Name: "recall", Mode: LM, Vocab: v, PadID: -1, MaxLen: r.cfg.Len, Metric: Accuracy,
		Chance: 1 / float64(r.cfg.Pairs)}
}

// Len implements Task.
func (r *Recall) Len(s Split) int {
	return [3]int{r.cfg.Train, r.cfg.Val, r.cfg.Test}[s]
}

// ExampleLen implements Task.
func (r *Recall) ExampleLen(Split, int) int { return r.cfg.Len }

// Example implements Task.
func (r *Recall) Example(tokens, targets []int32, s Split, i int) {
	c := r.cfg
	if i < 0 || i >= r.Len(s) {
		panic(fmt.Sprintf("data: recall example %d of %s out of range", i, s))
	}
	rng := rand.New(rand.NewPCG(c.Seed^0x726563616c6c, uint64(s)<<56|uint64(i)))
	t := tokens[:c.Len]
	for j := range t {
		t[j] = RecallFiller
		targets[j] = -1
	}
	// Place Pairs blocks of width w (2, or 1 when fused) in the first
	// Len-Queries cells. Random layout: choose Pairs distinct sorted slots
	// among Len-Queries-(w-1)·Pairs and shift the j-th by (w-1)·j. Pairs
	// first: slot j is j, so block j starts at w·j.
	n := c.Len - c.Queries
	w := 2
	if c.Fused {
		w = 1
	}
	var slots []int
	if c.Layout == RecallPairsFirst {
		slots = make([]int, c.Pairs)
		for j := range slots {
			slots[j] = j
		}
	} else {
		slots = sampleSorted(rng, n-(w-1)*c.Pairs, c.Pairs)
	}
	keys := rng.Perm(c.Keys)[:c.Pairs]
	perm := rng.Perm(c.Values)
	vals := make([]int32, c.Pairs)
	fused := int32(RecallKey0 + c.Keys + c.Values)
	for j, sl := range slots {
		p := sl + (w-1)*j
		vals[j] = int32(RecallKey0 + c.Keys + perm[j])
		if c.Fused {
			t[p] = fused + int32(keys[j]*c.Values+perm[j])
		} else {
			t[p] = int32(RecallKey0 + keys[j])
			t[p+1] = vals[j]
		}
	}
	for i := n; i < c.Len; i++ {
		q := rng.IntN(c.Pairs)
		t[i] = int32(RecallKey0 + keys[q])
		targets[i] = vals[q]
	}
}

// sampleSorted returns k distinct integers from [0,n) in increasing order
// (Floyd's algorithm, then a sort).
func sampleSorted(r *rand.Rand, n, k int) []int {
	set := make(map[int]bool, k)
	out := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		x := r.IntN(j + 1)
		if set[x] {
			x = j
		}
		set[x] = true
		out = append(out, x)
	}
	slices.Sort(out)
	return out
}
