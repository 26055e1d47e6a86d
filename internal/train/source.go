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
func (s TaskSource) Next(b *data.Batch) { s.L.Next(b) }

// State is nil: the step alone sets the position.
func (s TaskSource) State() (json.RawMessage, error) { return nil, nil }

// Restore seeks to the batch after step.
func (s TaskSource) Restore(step int, _ json.RawMessage) error {
	s.L.Seek(step)
	return nil
}

// TextSource draws batches of B windows of T+1 bytes uniformly from a text,
// tokens the first T bytes and targets the last T (data.TextBatch), with a
// seeded PCG whose state a checkpoint keeps.
type TextSource struct {
	text []byte
	B, T int
	pcg  *rand.PCG
	rng  *rand.Rand
}

// NewTextSource returns the source of batch B, length T over text, drawn
// from seed.
func NewTextSource(text []byte, B, T int, seed uint64) *TextSource {
	pcg := rand.NewPCG(seed, 0x7465787462617463)
	return &TextSource{text: text, B: B, T: T, pcg: pcg, rng: rand.New(pcg)}
}

// Next fills b with B random windows.
func (s *TextSource) Next(b *data.Batch) {
	n := s.B * s.T
	if cap(b.Tokens) < n {
		b.Tokens, b.Targets = make([]int32, n), make([]int32, n)
	}
	b.Tokens, b.Targets, b.B, b.T = b.Tokens[:n], b.Targets[:n], s.B, s.T
	data.TextBatch(b.Tokens, b.Targets, s.text, s.B, s.T, s.rng)
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
