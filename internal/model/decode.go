package model

import (
	"fmt"
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Decoding is one sequence's incremental decoding state: a mixer state per
// block (mixer.Decoder) and the position reached. It is not safe for
// concurrent use; each sequence has its own.
type Decoding[F kernels.Float] struct {
	states []mixer.State
	n, max int
	broken bool // a mixer failed half-way: the states disagree
	// Work rows of one Decode call, grown as needed.
	x, x2, ln, tmp, h, g, mean, rstd []F
}

// Broken reports that a Decode failed after some blocks' states had moved
// on; the decoding cannot continue.
func (d *Decoding[F]) Broken() bool { return d.broken }

// Len is the number of positions decoded so far.
func (d *Decoding[F]) Len() int { return d.n }

// Bytes is the memory of the mixers' states.
func (d *Decoding[F]) Bytes() int64 {
	var b int64
	for _, s := range d.states {
		b += s.Bytes()
	}
	return b
}

// CanDecode reports whether the model decodes incrementally: a causal lm
// whose mixer kind implements mixer.Decoder.
func (m *Model[F]) CanDecode() error {
	c := m.Config
	if c.Task != "lm" || !c.Causal {
		return fmt.Errorf("model: decoding needs a causal lm (task %q, causal %v)", c.Task, c.Causal)
	}
	if _, ok := m.mixers[0].(mixer.Decoder[F]); !ok || !c.kind.Decode {
		return fmt.Errorf("model: mixer kind %q does not decode incrementally", c.kind.Name)
	}
	if c.PadID != nil {
		// Forward excludes pad tokens as keys; the decoders do not.
		return fmt.Errorf("model: a causal lm with pad_id does not decode incrementally")
	}
	return nil
}

// NewDecoding returns the empty state of a sequence of at most maxLen ≤
// max_len positions, or CanDecode's error.
func (m *Model[F]) NewDecoding(maxLen int) (*Decoding[F], error) {
	if err := m.CanDecode(); err != nil {
		return nil, err
	}
	if maxLen < 1 || maxLen > m.Config.MaxLen {
		return nil, fmt.Errorf("model: decoding length %d outside [1, max_len=%d]", maxLen, m.Config.MaxLen)
	}
	d := &Decoding[F]{max: maxLen}
	for i, mx := range m.mixers {
		d.states = append(d.states, mx.(mixer.Decoder[F]).NewState(maxLen, PassSeed(m.Seed, m.Step, i)))
	}
	return d, nil
}

// Decode runs the model on the next len(tokens) positions of d's sequence
// and writes their logits to logits [len(tokens), vocab_size]: the logits a
// Forward over d's length gives at those positions. Tokens must lie in the
// vocabulary and the sequence within d's length; these errors are found
// before d changes. A mixer failing half-way breaks d (Broken).
func (m *Model[F]) Decode(d *Decoding[F], tokens []int32, logits []F) error {
	c := m.Config
	n, D, H, V := len(tokens), c.DModel, c.DFF, c.VocabSize
	switch {
	case d.broken:
		return fmt.Errorf("model: this decoding failed earlier and cannot continue")
	case n == 0:
		return fmt.Errorf("model: no tokens to decode")
	case d.n+n > d.max:
		return fmt.Errorf("model: %d positions exceed the decoding length %d", d.n+n, d.max)
	case len(logits) < n*V:
		return fmt.Errorf("model: %d logits for %d positions of vocab_size %d", len(logits), n, V)
	}
	for i, v := range tokens {
		if v < 0 || int(v) >= V {
			return fmt.Errorf("model: token %d at position %d outside [0, vocab_size=%d)", v, d.n+i, V)
		}
	}
	for _, b := range []*[]F{&d.x, &d.x2, &d.ln, &d.tmp} {
		*b = growTo(*b, n*D)
	}
	d.h, d.g = growTo(d.h, n*H), growTo(d.g, n*H)
	d.mean, d.rstd = growTo(d.mean, n), growTo(d.rstd, n)
	embeddingForward(d.x, tokens, m.w.embed, m.w.pos[d.n*D:], 1, n, D)
	th := m.threads()
	step := func(i int, out, x []F) error {
		return m.mixers[i].(mixer.Decoder[F]).Decode(out, x, d.states[i], n, th)
	}
	if err := m.decodeBlocks(th, step, d.x, d.x2, d.ln, d.tmp, d.h, d.g, d.mean, d.rstd, logits, n); err != nil {
		d.broken = true
		return err
	}
	d.n += n
	if n > 64 { // a prompt's work rows are not kept for the sequence's life
		d.x, d.x2, d.ln, d.tmp, d.h, d.g, d.mean, d.rstd = nil, nil, nil, nil, nil, nil, nil, nil
	}
	return nil
}

// DecodeBatch decodes one next token for each of several sequences:
// tokens[i] is the next token of ds[i], and row i of logits
// [len(ds), vocab_size] gets its logits, as Decode would give them one by
// one. The projections and feed-forwards then read their weights once for
// all sequences (mixer.BatchDecoder; a kind without it is stepped
// sequence by sequence). Errors are found before any state changes.
func (m *Model[F]) DecodeBatch(ds []*Decoding[F], tokens []int32, logits []F) error {
	c := m.Config
	n, D, H, V := len(ds), c.DModel, c.DFF, c.VocabSize
	switch {
	case n == 0 || len(tokens) != n:
		return fmt.Errorf("model: DecodeBatch with %d sequences and %d tokens", n, len(tokens))
	case len(logits) < n*V:
		return fmt.Errorf("model: %d logits for %d sequences of vocab_size %d", len(logits), n, V)
	}
	seen := map[*Decoding[F]]bool{}
	for i, d := range ds {
		switch {
		case seen[d]:
			return fmt.Errorf("model: sequence %d appears twice in DecodeBatch", i)
		case d.n+1 > d.max:
			return fmt.Errorf("model: sequence %d: %d positions exceed its decoding length %d", i, d.n+1, d.max)
		case tokens[i] < 0 || int(tokens[i]) >= V:
			return fmt.Errorf("model: sequence %d: token %d outside [0, vocab_size=%d)", i, tokens[i], V)
		}
		seen[d] = true
	}
	if _, ok := m.mixers[0].(mixer.BatchDecoder[F]); !ok {
		for i, d := range ds {
			if err := m.Decode(d, tokens[i:i+1], logits[i*V:(i+1)*V]); err != nil {
				return err
			}
		}
		return nil
	}
	w, ok := batchPool.Get().(*Decoding[F]) // its work rows only
	if !ok {
		w = &Decoding[F]{}
	}
	defer batchPool.Put(w)
	for _, b := range []*[]F{&w.x, &w.x2, &w.ln, &w.tmp} {
		*b = growTo(*b, n*D)
	}
	w.h, w.g = growTo(w.h, n*H), growTo(w.g, n*H)
	w.mean, w.rstd = growTo(w.mean, n), growTo(w.rstd, n)
	// The sequences are independent: each thread takes a share of them
	// through every block, and the kernels inside run on one thread (on the
	// whole budget when there is one sequence), so a step has one fork and
	// one join instead of several per block.
	var (
		errMu sync.Mutex
		errs  []error
	)
	th := m.threads()
	inner := th
	if n > 1 {
		inner = 1
	}
	parallel.For(th, n, 1, func(_, lo, hi int) {
		rows := func(b []F, width int) []F { return b[lo*width : hi*width] }
		x := rows(w.x, D)
		for i := lo; i < hi; i++ {
			embeddingForward(w.x[i*D:(i+1)*D], tokens[i:i+1], m.w.embed, m.w.pos[ds[i].n*D:], 1, 1, D)
		}
		states := make([]mixer.State, hi-lo)
		step := func(layer int, out, in []F) error {
			for i, d := range ds[lo:hi] {
				states[i] = d.states[layer]
			}
			return m.mixers[layer].(mixer.BatchDecoder[F]).DecodeBatch(out, in, states, inner)
		}
		if err := m.decodeBlocks(inner, step, x, rows(w.x2, D), rows(w.ln, D), rows(w.tmp, D), rows(w.h, H), rows(w.g, H),
			rows(w.mean, 1), rows(w.rstd, 1), rows(logits[:n*V], V), hi-lo); err != nil {
			errMu.Lock()
			errs = append(errs, err)
			errMu.Unlock()
		}
	})
	if len(errs) > 0 {
		for _, d := range ds {
			d.broken = true
		}
		return errs[0]
	}
	for _, d := range ds {
		d.n++
	}
	return nil
}

// batchPool recycles DecodeBatch's work rows.
var batchPool sync.Pool

// decodeBlocks runs the blocks, the final LayerNorm and the head on the n
// embedded rows x: step(i, out, in) is block i's mixer on the LN1 rows in.
// x2, ln, tmp [n,D], h, g [n,d_ff] and mean, rstd [n] are workspace. The
// kernels run on at most th threads.
func (m *Model[F]) decodeBlocks(th int, step func(i int, out, in []F) error, x, x2, ln, tmp, h, g, mean, rstd, logits []F, n int) error {
	c := m.Config
	D, H, V := c.DModel, c.DFF, c.VocabSize
	if !c.Reversible {
		x2 = x
	} else {
		copy(x2, x)
	}
	for i := range c.NLayers {
		bw := &m.w.blocks[i]
		// x1 += mixer(LN1(x2)); x2 += FF(LN2(x1)), with x1 = x2 = x unless
		// the blocks are reversible.
		layerNormForward(th, ln, mean, rstd, x2, bw.ln1w, bw.ln1b, n, D)
		if err := step(i, tmp, ln); err != nil {
			return fmt.Errorf("model: block %d: %w", i, err)
		}
		kernels.AddRow(x, tmp)
		layerNormForward(th, ln, mean, rstd, x, bw.ln2w, bw.ln2b, n, D)
		ffForward(th, m.prec, x2, h, g, ln, bw.fc1w, bw.fc1b, bw.fc2w, bw.fc2b, m.packed(i), n, D, H)
	}
	if c.Reversible {
		for k := range x {
			x[k] = (x[k] + x2[k]) / 2
		}
	}
	layerNormForward(th, ln, mean, rstd, x, m.w.lnfw, m.w.lnfb, n, D)
	kernels.LinearForward(th, m.prec, logits[:n*V], ln, m.w.headw, m.headBF16, m.w.headb, n, D, V, false)
	return nil
}

func growTo[F kernels.Float](b []F, n int) []F {
	if cap(b) < n {
		return make([]F, n)
	}
	return b[:n]
}
