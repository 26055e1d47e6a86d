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
	// Keys and Values are the sizes of the key and value vocabularies (64
	// and 16); Keys ≥ Pairs, since a sequence's keys are distinct.
	Keys   int `json:"keys"`
	Values int `json:"values"`
	// Train, Val, Test are the split sizes (100000, 1000, 2000).
	Train int    `json:"train"`
	Val   int    `json:"val"`
	Test  int    `json:"test"`
	Seed  uint64 `json:"seed"`
}

func (c *RecallConfig) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Len, 256)
	def(&c.Pairs, 16)
	def(&c.Keys, 64)
	def(&c.Values, 16)
	def(&c.Train, 100000)
	def(&c.Val, 1000)
	def(&c.Test, 2000)
}

// Recall token ids: 0 is unused (pad), 1 the filler, then the keys, then the
// values.
const (
	RecallFiller = 1
	RecallKey0   = 2
)

// Recall is synthetic associative recall: a sequence of Len tokens holds
// Pairs adjacent (key, value) pairs with distinct keys, at uniformly random
// non-overlapping positions among filler tokens, and ends with a query key
// drawn from those keys. The only target is at the last position: the value
// paired with the query (accuracy over that target; chance is 1/Values).
// It is framed as language modelling with a single target so that every
// mixer, causal or not, can be trained on it; nothing after the query is
// visible, so a bidirectional model cannot cheat.
//
// Example i of split s is generated on demand from a PCG seeded by (Seed,
// s, i), so the splits are disjoint streams and cost no memory.
type Recall struct {
	cfg RecallConfig
}

// NewRecall returns the recall task, or an error for an impossible config.
func NewRecall(c RecallConfig) (*Recall, error) {
	c.defaults()
	switch {
	case c.Pairs < 1 || 2*c.Pairs+1 > c.Len:
		return nil, fmt.Errorf("recall: %d pairs do not fit in len %d", c.Pairs, c.Len)
	case c.Keys < c.Pairs:
		return nil, fmt.Errorf("recall: keys %d < pairs %d", c.Keys, c.Pairs)
	case c.Values < 2:
		return nil, fmt.Errorf("recall: values %d < 2", c.Values)
	case c.Train < 0 || c.Val < 0 || c.Test < 0:
		return nil, fmt.Errorf("recall: negative split size")
	}
	return &Recall{cfg: c}, nil
}

// Config returns the resolved configuration.
func (r *Recall) Config() RecallConfig { return r.cfg }

// Info implements Task.
func (r *Recall) Info() Info {
	return Info{Name: "recall", Mode: LM, Vocab: RecallKey0 + r.cfg.Keys + r.cfg.Values,
		PadID: -1, MaxLen: r.cfg.Len, Metric: Accuracy}
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
	// Place Pairs blocks of width 2 in the first Len-1 cells: choose Pairs
	// distinct sorted slots among Len-1-Pairs and shift the j-th by j.
	free := c.Len - 1 - c.Pairs
	slots := sampleSorted(rng, free, c.Pairs)
	keys := rng.Perm(c.Keys)[:c.Pairs]
	var qv int32
	q := rng.IntN(c.Pairs)
	for j, sl := range slots {
		p := sl + j
		v := int32(rng.IntN(c.Values))
		t[p] = int32(RecallKey0 + keys[j])
		t[p+1] = int32(RecallKey0+c.Keys) + v
		if j == q {
			qv = t[p+1]
		}
	}
	t[c.Len-1] = int32(RecallKey0 + keys[q])
	targets[c.Len-1] = qv
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
