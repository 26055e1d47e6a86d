package train

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/tokenmix/tokenmix/internal/data"
)

// TaskSource is the Source of a task's training split: shuffled, bucketed
// batches from a data.Loader, whose order depends only on the seed and the
// step.
type TaskSource struct{ L *data.Loader }

// Next fills b with the next batch.
func (s TaskSource) Next(b *data.Batch) error {
	s.L.Next(b)
	return nil
}

// State is nil: the step alone sets the position.
func (s TaskSource) State() (json.RawMessage, error) { return nil, nil }

// Restore seeks to the batch after step.
func (s TaskSource) Restore(step int, _ json.RawMessage) error {
	s.L.Seek(step)
	return nil
}

// TextSource draws batches of B random windows of T tokens from a text
// (data.Windows.Random) with a seeded PCG whose state a checkpoint keeps.
type TextSource struct {
	text data.Text
	win  *data.Windows
	B, T int
	pcg  *rand.PCG
	rng  *rand.Rand
}

// NewTextSource returns the source of batch B, length T over text, drawn
// from seed. It returns an error if text has T tokens or fewer.
func NewTextSource(text data.Text, B, T int, seed uint64) (*TextSource, error) {
	w, err := data.NewWindows(text, T, 0)
	if err != nil {
		return nil, err
	}
	if text.Len() <= T {
		return nil, fmt.Errorf("train: %d tokens of text, too few for a window of %d", text.Len(), T+1)
	}
	pcg := rand.NewPCG(seed, 0x7465787462617463)
	return &TextSource{text: text, win: w, B: B, T: T, pcg: pcg, rng: rand.New(pcg)}, nil
}

// Next fills b with B random windows.
func (s *TextSource) Next(b *data.Batch) error {
	n := s.B * s.T
	if cap(b.Tokens) < n {
		b.Tokens, b.Targets = make([]int32, n), make([]int32, n)
	}
	b.Tokens, b.Targets, b.B, b.T = b.Tokens[:n], b.Targets[:n], s.B, s.T
	b.Index, b.Lens = b.Index[:0], b.Lens[:0]
	for range s.B {
		b.Lens = append(b.Lens, s.T)
	}
	s.win.Random(b.Tokens, b.Targets, s.B, s.rng)
	return nil
}

// State is the PCG state, as JSON.
func (s *TextSource) State() (json.RawMessage, error) {
	st, err := s.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string][]byte{"pcg": st})
}

// Restore sets the PCG state saved by State.
func (s *TextSource) Restore(_ int, state json.RawMessage) error {
	var st struct{ PCG []byte }
	if err := json.Unmarshal(state, &st); err != nil {
		return fmt.Errorf("text source state: %v", err)
	}
	return s.pcg.UnmarshalBinary(st.PCG)
}

// WithLen returns a source of batch B, length T over the same text that
// draws from s's PCG, so that the two share one random stream and one
// state (a length curriculum's stages, NewCurriculum). It returns an error
// if the text has T tokens or fewer.
func (s *TextSource) WithLen(B, T int) (*TextSource, error) {
	t, err := NewTextSource(s.text, B, T, 0)
	if err != nil {
		return nil, err
	}
	t.pcg, t.rng = s.pcg, s.rng
	return t, nil
}
