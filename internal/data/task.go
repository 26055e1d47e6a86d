package data

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/tokenmix/tokenmix/tokenizer"
)

// Split names one of a task's three splits.
type Split int

const (
	Train Split = iota
	Val
	Test
)

func (s Split) String() string {
	switch s {
	case Train:
		return "train"
	case Val:
		return "val"
	case Test:
		return "test"
	}
	return fmt.Sprintf("Split(%d)", int(s))
}

// Mode is what the model's head does.
type Mode string

const (
	// Classify: one class per sequence (mean-pooled head).
	Classify Mode = "classify"
	// LM: one target per position (−1 = none).
	LM Mode = "lm"
	// Tag: one tag per position (−1 = none), with a bidirectional model
	// (BIO tags of labelled spans, tag.go).
	Tag Mode = "tag"
)

// PerPosition says the mode has a target per position (LM and Tag).
func (m Mode) PerPosition() bool { return m != Classify }

// Metric names a task's test metric.
type Metric string

const (
	// Accuracy is the fraction of targets predicted exactly (higher is better).
	Accuracy Metric = "accuracy"
	// BitsPerByte is the mean cross-entropy over targets in bits (lower is better).
	BitsPerByte Metric = "bits_per_byte"
)

// HigherIsBetter reports whether larger values of m are better.
func (m Metric) HigherIsBetter() bool { return m == Accuracy }

// Info describes a task to the model builder.
type Info struct {
	Name  string
	Mode  Mode
	Vocab int
	// Classes is the number of classes (Classify only; 0 for LM).
	Classes int
	// PadID is the padding token, or −1 when sequences are never padded
	// (LM batches pad only at the end, with targets −1, which a causal
	// model never sees from earlier positions).
	PadID int
	// MaxLen is the longest sequence the task produces.
	MaxLen int
	// Causal says the task needs a causal model (next-token prediction).
	Causal bool
	// Metric is the test metric.
	Metric Metric
	// Chance is the metric of a guess that ignores the input, when the
	// task knows it (0 otherwise): 1/Classes for balanced classes, the
	// most frequent training class's share for unbalanced ones (ListOps),
	// the accuracy of copying a random value of the context (recall), 8
	// bits per byte for a uniform byte (text). A result is above chance when
	// its 95% confidence interval lies beyond it.
	Chance float64 `json:",omitempty"`
	// LabelNames names the classes (Classify), or is nil.
	LabelNames []string `json:",omitempty"`
	// TokenBytes, for text read through a tokenizer, is the byte length of
	// each token id; bits per byte then divide by the scored tokens' bytes.
	// nil for byte-level text, where each token is one byte.
	TokenBytes []int `json:"-"`
	// Tokenizer is the tokenizer of such text (its runs keep a copy), or
	// nil.
	Tokenizer *tokenizer.Tokenizer `json:"-"`
}

// Task is a deterministic dataset with train, validation and test splits.
// Examples are addressed by (split, index); the same task built from the
// same config always yields the same examples.
type Task interface {
	Info() Info
	// Len is the number of examples in split s.
	Len(s Split) int
	// ExampleLen is the token count of example i of split s.
	ExampleLen(s Split, i int) int
	// Example writes example i of split s: its ExampleLen tokens into
	// tokens, and its target(s) into targets (1 for Classify, ExampleLen for
	// LM). Example panics if i is out of range or a slice is too short.
	Example(tokens, targets []int32, s Split, i int)
}

// Batch is a padded minibatch.
type Batch struct {
	B, T int
	// Tokens is [B,T]; positions past an example's end hold the pad token
	// (Info.PadID, or 0 when PadID < 0).
	Tokens []int32
	// Targets is [B] (Classify) or [B,T] (LM, −1 = no target).
	Targets []int32
	// Index holds the example index of each row.
	Index []int
	// Lens holds the token count of each row before its padding.
	Lens []int
}

// NumTargets is the number of targets ≥ 0 in the batch.
func (b *Batch) NumTargets() int {
	n := 0
	for _, t := range b.Targets {
		if t >= 0 {
			n++
		}
	}
	return n
}

// Fill makes dst a batch of examples idx of split s, padded to the longest
// of them (or to fixedLen when fixedLen > 0). dst's slices are reused when
// large enough. Fill panics if idx is empty or an example is longer than
// fixedLen.
func Fill(dst *Batch, task Task, s Split, idx []int, fixedLen int) {
	if len(idx) == 0 {
		panic("data: Fill with no examples")
	}
	info := task.Info()
	t := fixedLen
	if t <= 0 {
		for _, i := range idx {
			t = max(t, task.ExampleLen(s, i))
		}
	}
	b := len(idx)
	dst.B, dst.T = b, t
	dst.Tokens = grow(dst.Tokens, b*t)
	nt := b
	if info.Mode.PerPosition() {
		nt = b * t
	}
	dst.Targets = grow(dst.Targets, nt)
	dst.Index = append(dst.Index[:0], idx...)
	dst.Lens = dst.Lens[:0]
	pad := int32(max(info.PadID, 0))
	for r, i := range idx {
		n := task.ExampleLen(s, i)
		if n > t {
			panic(fmt.Sprintf("data: example %d of %s has %d tokens > %d", i, s, n, t))
		}
		row := dst.Tokens[r*t : (r+1)*t]
		var tg []int32
		if info.Mode.PerPosition() {
			tg = dst.Targets[r*t : (r+1)*t]
		} else {
			tg = dst.Targets[r : r+1]
		}
		task.Example(row[:n], tg, s, i)
		dst.Lens = append(dst.Lens, n)
		for j := n; j < t; j++ {
			row[j] = pad
		}
		if info.Mode.PerPosition() {
			for j := n; j < t; j++ {
				tg[j] = -1
			}
		}
	}
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// Loader walks one split in batches. A shuffling loader yields an endless
// stream: the concatenation of one seeded permutation of the split per
// epoch. A sequential loader yields the split once, in order.
type Loader struct {
	task     Task
	split    Split
	batch    int
	fixedLen int
	seed     uint64
	shuffle  bool
	n        int
	epoch    int
	pos      int
	perm     []int
	idx      []int
	bucket   int
}

// NewLoader returns a loader over split s of task in batches of batch
// examples (the last sequential batch may be smaller). fixedLen > 0 pads
// every batch to that length. NewLoader panics if batch < 1 or the split is
// empty.
func NewLoader(task Task, s Split, batch int, shuffle bool, seed uint64, fixedLen int) *Loader {
	if batch < 1 {
		panic("data: NewLoader with batch < 1")
	}
	n := task.Len(s)
	if n == 0 {
		panic(fmt.Sprintf("data: NewLoader on empty %s split", s))
	}
	l := &Loader{task: task, split: s, batch: batch, fixedLen: fixedLen, seed: seed, shuffle: shuffle, n: n}
	l.setEpoch(0)
	return l
}

// Bucket groups examples of similar length into the same batch, so less
// of each batch is padding: a sequential loader visits the split in order
// of length (shortest first; ties in index order), and a shuffling loader
// sorts each run of k·batch examples of its permutation by length and then
// shuffles the order of that run's batches. k < 2 turns bucketing off.
// Bucket returns l and must be called before the first Next.
func (l *Loader) Bucket(k int) *Loader {
	l.bucket = k
	l.perm = nil
	l.setEpoch(0)
	return l
}

func (l *Loader) setEpoch(e int) {
	l.epoch, l.pos = e, 0
	if !l.shuffle && l.bucket < 2 {
		return
	}
	if l.perm == nil {
		l.perm = make([]int, l.n)
	} else if !l.shuffle {
		return // the sequential length order does not change
	}
	for i := range l.perm {
		l.perm[i] = i
	}
	byLen := func(p []int) {
		slices.SortStableFunc(p, func(a, b int) int {
			return l.task.ExampleLen(l.split, a) - l.task.ExampleLen(l.split, b)
		})
	}
	if !l.shuffle {
		byLen(l.perm)
		return
	}
	r := rand.New(rand.NewPCG(l.seed, uint64(e)+0x9e3779b97f4a7c15))
	r.Shuffle(l.n, func(i, j int) { l.perm[i], l.perm[j] = l.perm[j], l.perm[i] })
	if l.bucket < 2 {
		return
	}
	run := l.bucket * l.batch
	var tmp []int
	for lo := 0; lo < l.n; lo += run {
		chunk := l.perm[lo:min(lo+run, l.n)]
		byLen(chunk)
		nb := (len(chunk) + l.batch - 1) / l.batch
		tmp = tmp[:0]
		for _, b := range r.Perm(nb) {
			tmp = append(tmp, chunk[b*l.batch:min((b+1)*l.batch, len(chunk))]...)
		}
		copy(chunk, tmp)
	}
}

// Seek positions a shuffling loader at the start of its k-th batch (as if
// Next had been called k times), so a resumed run sees the same data.
// Seek panics on a sequential loader.
func (l *Loader) Seek(k int) {
	if !l.shuffle {
		panic("data: Seek on a sequential loader")
	}
	p := k * l.batch
	l.setEpoch(p / l.n)
	l.pos = p % l.n
}

// Epoch is the current epoch (the number of full passes completed).
func (l *Loader) Epoch() int { return l.epoch }

// Next fills dst with the next batch. It returns false when a sequential
// loader has finished its split (a shuffling loader never finishes).
func (l *Loader) Next(dst *Batch) bool {
	l.idx = l.idx[:0]
	for len(l.idx) < l.batch {
		if l.pos == l.n {
			if !l.shuffle {
				break
			}
			l.setEpoch(l.epoch + 1)
		}
		i := l.pos
		if l.perm != nil {
			i = l.perm[l.pos]
		}
		l.idx = append(l.idx, i)
		l.pos++
	}
	if len(l.idx) == 0 {
		return false
	}
	Fill(dst, l.task, l.split, l.idx, l.fixedLen)
	return true
}

// Reset rewinds the loader to its first batch.
func (l *Loader) Reset() { l.setEpoch(0) }
