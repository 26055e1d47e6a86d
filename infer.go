package tokenmix

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/memstat"
)

// Logits holds a call's logits in fresh memory: Shape is [N, n_classes]
// for a classifier, [N, T, vocab_size] for an lm and [N, T, n_classes]
// for a tagger, N the number of
// sequences and T the longest one's length; an lm's positions past a
// sequence's end hold NaN. Data is row-major.
type Logits struct {
	Shape []int
	Data  []float32
}

// Prediction is a classifier's answer for one sequence.
type Prediction struct {
	Label int       `json:"label"` // the most probable class
	Name  string    `json:"name"`  // its name (the index in decimal without names)
	Probs []float32 `json:"probs"` // softmax over the classes
}

// Score is a causal lm's score of one sequence of n tokens: LogProbs[t−1]
// is log p(token t | tokens before t) for t = 1…n−1 (position 0 has no
// context), in nats; Nats is minus their sum, BitsPerToken that over
// (n−1)·ln 2, and BitsPerByte that over ln 2 times the bytes of tokens
// 1…n−1 (one each for a byte-level model, the token's bytes through a
// tokenizer), so that models of different tokenizers compare; it is 0
// when those tokens have no bytes.
type Score struct {
	LogProbs     []float32 `json:"log_probs"`
	Nats         float64   `json:"nats"`
	BitsPerToken float64   `json:"bits_per_token"`
	BitsPerByte  float64   `json:"bits_per_byte"`
}

// maxBatchTokens caps the B·T of one forward, so a large call runs as
// several batches of bounded memory.
const maxBatchTokens = 16384

// Logits runs the model on seqs and returns its logits. It returns an error
// naming the sequence for an empty sequence, one longer than max_len or a
// token outside the vocabulary, and ctx.Err() when ctx is cancelled
// (checked between layers).
func (m *Model) Logits(ctx context.Context, seqs [][]int32) (*Logits, error) {
	var out *Logits
	if m.net.Config.Pooled() {
		V := m.net.Config.HeadOut() // n_classes, or an embedder's d_model
		out = &Logits{Shape: []int{len(seqs), V}, Data: make([]float32, len(seqs)*V)}
	} else {
		T := 0
		for _, s := range seqs {
			T = max(T, len(s))
		}
		V := m.net.Config.HeadOut() // vocab_size, or a tagger's n_classes
		out = &Logits{Shape: []int{len(seqs), T, V}, Data: make([]float32, len(seqs)*T*V)}
		for i := range out.Data {
			out.Data[i] = float32(math.NaN())
		}
	}
	row := len(out.Data) / max(len(seqs), 1)
	err := m.forEach(ctx, seqs, func(i int, logits []float32) {
		copy(out.Data[i*row:], logits)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Classify returns each sequence's most probable class and the class
// probabilities. It needs a classifier (task "classify"); other errors as
// Logits.
func (m *Model) Classify(ctx context.Context, seqs [][]int32) ([]Prediction, error) {
	if m.cfg.Task != "classify" {
		return nil, fmt.Errorf("tokenmix: Classify needs a classifier (task \"classify\"), this model's task is %q", m.cfg.Task)
	}
	preds := make([]Prediction, len(seqs))
	err := m.forEach(ctx, seqs, func(i int, logits []float32) {
		p := Prediction{Probs: data.Softmax(logits)}
		p.Label = data.Argmax(p.Probs)
		p.Name = m.labelName(p.Label)
		preds[i] = p
	})
	if err != nil {
		return nil, err
	}
	return preds, nil
}

// Score returns the log-probability the model gives each token of each
// sequence after the first. It needs a causal lm, and sequences of at
// least 2 tokens; other errors as Logits.
func (m *Model) Score(ctx context.Context, seqs [][]int32) ([]Score, error) {
	if m.cfg.Task != "lm" || !m.cfg.Causal {
		return nil, fmt.Errorf("tokenmix: Score needs a causal lm (task \"lm\", causal true), this model's task is %q, causal %v", m.cfg.Task, m.cfg.Causal)
	}
	for i, s := range seqs {
		if len(s) == 1 {
			return nil, fmt.Errorf("tokenmix: sequence %d: 1 token, Score needs at least 2 (position 0 has no context)", i)
		}
	}
	V := m.cfg.VocabSize
	scores := make([]Score, len(seqs))
	err := m.forEach(ctx, seqs, func(i int, logits []float32) {
		s := seqs[i]
		sc := Score{LogProbs: make([]float32, len(s)-1)}
		for t := 1; t < len(s); t++ {
			lp := data.LogSoftmaxAt(logits[(t-1)*V:t*V], int(s[t]))
			sc.LogProbs[t-1] = float32(lp)
			sc.Nats -= lp
		}
		sc.BitsPerToken = sc.Nats / float64(len(s)-1) / math.Ln2
		if n := len(m.appendText(nil, s[1:]...)); n > 0 {
			sc.BitsPerByte = sc.Nats / float64(n) / math.Ln2
		}
		scores[i] = sc
	})
	if err != nil {
		return nil, err
	}
	return scores, nil
}

func (m *Model) labelName(k int) string {
	if k < len(m.cfg.LabelNames) {
		return m.cfg.LabelNames[k]
	}
	return strconv.Itoa(k)
}

// check validates every sequence before any work is done.
func (m *Model) check(seqs [][]int32) error {
	c := m.cfg
	if len(seqs) == 0 {
		return fmt.Errorf("tokenmix: no sequences")
	}
	for i, s := range seqs {
		if len(s) == 0 {
			return fmt.Errorf("tokenmix: sequence %d is empty", i)
		}
		if len(s) > c.MaxLen {
			return fmt.Errorf("tokenmix: sequence %d has %d tokens, longer than max_len %d", i, len(s), c.MaxLen)
		}
		for t, v := range s {
			if v < 0 || int(v) >= c.VocabSize {
				return fmt.Errorf("tokenmix: sequence %d, position %d: token %d outside the vocabulary [0, %d)", i, t, v, c.VocabSize)
			}
		}
	}
	return nil
}

// forEach runs the model on seqs in batches and calls fn with each
// sequence's logits: [n_classes] for a classifier, [d_model] for an
// embedder, [len, vocab_size] for an lm, [len, n_classes] for a tagger (a
// view into the model's buffer, valid during the call only).
//
// Sequences run sorted by length, in batches of at most maxBatchTokens
// tokens. Where padding cannot change a sequence's result, sequences of
// different lengths share a batch (mixer.Kind.PadInvariant): a causal lm
// pads at the end (no position sees a later one), a model with pad_id and
// a kind that honours key padding pads with pad_id (excluded as keys and
// from the pooling). Otherwise a batch holds sequences of one length.
func (m *Model) forEach(ctx context.Context, seqs [][]int32, fn func(i int, logits []float32)) error {
	return m.forEachOf(ctx, seqs, false, fn)
}

// forEachOf is forEach, or with pooled set (a classifier or an
// embedder) the pooled representation [d_model] of each sequence instead
// of its logits.
func (m *Model) forEachOf(ctx context.Context, seqs [][]int32, pooled bool, fn func(i int, out []float32)) error {
	if err := m.check(seqs); err != nil {
		return err
	}
	c, k := m.cfg, m.net.Config.Kind()
	pad, canPad := int32(0), c.Causal && c.Task == "lm" && k.PadInvariant
	if !canPad && c.PadID != nil && k.KeyPadding && k.PadInvariant {
		pad, canPad = int32(*c.PadID), true
	}
	order := make([]int, len(seqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(seqs[a]) - len(seqs[b]) })
	var tokens []int32
	pb := m.passBudget()
	for lo := 0; lo < len(order); {
		// The batch is order[lo:hi], padded to the longest, len(seqs[order[hi-1]]).
		hi := lo + 1
		for hi < len(order) {
			T := len(seqs[order[hi]])
			if (!canPad && T != len(seqs[order[lo]])) || (hi+1-lo)*T > maxBatchTokens {
				break
			}
			hi++
		}
		if pb > 0 { // one plan when the batch fits, a bisection when not
			fits := func(b int) bool { return m.PassBytes(b, len(seqs[order[lo+b-1]])) <= pb }
			if !fits(1) {
				T := len(seqs[order[lo]])
				return fmt.Errorf("tokenmix: input %d of %d tokens needs a pass of %s, more than the %s the memory budget leaves beside the weights (WithMaxMemory)",
					order[lo], T, memstat.FormatBytes(m.PassBytes(1, T)), memstat.FormatBytes(pb))
			}
			if !fits(hi - lo) {
				ok, bad := 1, hi-lo // the plan grows with the batch
				for bad-ok > 1 {
					if mid := (ok + bad) / 2; fits(mid) {
						ok = mid
					} else {
						bad = mid
					}
				}
				hi = lo + ok
			}
		}
		B, T := hi-lo, len(seqs[order[hi-1]])
		tokens = slices.Grow(tokens[:0], B*T)[:B*T]
		for b, i := range order[lo:hi] {
			row := tokens[b*T : (b+1)*T]
			n := copy(row, seqs[i])
			for t := n; t < T; t++ {
				row[t] = pad
			}
		}
		emit := func(b int, logits []float32) {
			i := order[lo+b]
			if !m.net.Config.Pooled() {
				logits = logits[:len(seqs[i])*m.net.Config.HeadOut()]
			}
			fn(i, logits)
		}
		if err := m.run(ctx, tokens, B, T, pooled, emit); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// run forwards one batch [B,T] and calls fn with row b's logits.
func (m *Model) run(ctx context.Context, tokens []int32, B, T int, pooled bool, fn func(b int, logits []float32)) error {
	release, err := m.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	net := m.net
	net.Cancel = ctx.Err
	defer func() { net.Cancel = nil }()
	if _, err := net.Forward(tokens, nil, B, T); err != nil {
		return err
	}
	logits := net.Logits()
	if pooled {
		logits = net.Pooled()
	}
	row := len(logits) / B
	for b := 0; b < B; b++ {
		fn(b, logits[b*row:(b+1)*row])
	}
	return nil
}
