package mixer

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// Decoder is implemented by causal mixers that run incrementally, for
// generation: a State holds what the positions so far leave behind (a
// key–value cache, running sums), and Decode maps the inputs of the next
// positions to their outputs, equal to what Forward computes for those
// positions of the whole sequence. A kind whose mixers implement it sets
// Kind.Decode.
type Decoder[F kernels.Float] interface {
	// NewState returns the empty state of a sequence of at most maxLen
	// positions, decoded as Forward would compute it over maxLen positions
	// with Pass.Seed seed (for kinds whose windows depend on the length or
	// draw random numbers, such as LSH).
	NewState(maxLen int, seed uint64) State
	// Decode writes out [n,D] for the inputs x [n,D] of the n positions
	// after those st holds, and adds them to st, on at most threads threads
	// (a thread budget as Pass.Threads; 0 is the default). It returns an
	// error, and leaves st unchanged, when st would exceed its maxLen.
	Decode(out, x []F, st State, n, threads int) error
}

// StateSizer is implemented by decoders that bound their states' memory
// in advance, so that a server can reserve it before a sequence starts.
type StateSizer interface {
	// StateBytes bounds State.Bytes of a state made by NewState(maxLen, …)
	// once it holds n ≤ maxLen positions.
	StateBytes(maxLen, n int) int64
}

// State is one sequence's decoding state.
type State interface {
	// Len is the number of positions decoded so far.
	Len() int
	// Bytes is the memory the state holds.
	Bytes() int64
}

// BatchDecoder is implemented by decoders that also step many sequences at
// once: row i of x [len(states), D] is the next position of states[i], and
// out [len(states), D] gets its output, on at most threads threads (as in
// Decode). The projections then read their weights once for all the
// sequences.
type BatchDecoder[F kernels.Float] interface {
	DecodeBatch(out, x []F, states []State, threads int) error
}

// BatchStates returns the states of a DecodeBatch call as their concrete
// type S. It returns an error naming the state that is of another type or
// appears twice, or that cannot take one more position (Len() ≥ limit(s)).
func BatchStates[S interface {
	State
	comparable
}](states []State, limit func(S) int) ([]S, error) {
	out := make([]S, len(states))
	seen := map[S]bool{}
	for i, st := range states {
		s, ok := st.(S)
		switch {
		case !ok:
			return nil, fmt.Errorf("mixer: state %d is a decoding state of another mixer", i)
		case seen[s]:
			return nil, fmt.Errorf("mixer: state %d appears twice in DecodeBatch", i)
		case s.Len()+1 > limit(s):
			return nil, fmt.Errorf("mixer: state %d: %d positions exceed its %d", i, s.Len()+1, limit(s))
		}
		seen[s] = true
		out[i] = s
	}
	return out, nil
}

// RepeatState is BatchStates for Decode's n positions of one sequence: st
// as its concrete type S, n times, or an error when it is of another type
// or cannot take n more positions.
func RepeatState[S interface {
	State
	comparable
}](st State, n int, limit func(S) int) ([]S, error) {
	s, ok := st.(S)
	switch {
	case !ok:
		return nil, fmt.Errorf("mixer: a decoding state of another mixer")
	case s.Len()+n > limit(s):
		return nil, fmt.Errorf("mixer: %d positions exceed the state's %d", s.Len()+n, limit(s))
	}
	out := make([]S, n)
	for i := range out {
		out[i] = s
	}
	return out, nil
}
