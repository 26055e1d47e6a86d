package train

import (
	"encoding/json"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// A length curriculum (train.curriculum) trains the first updates of the
// fine-tuning stage on shorter sequences: stage k's Steps updates on
// batches of its BatchSize sequences of its Len tokens, then the rest at
// the training length. With run step s (0-based, pretraining's updates
// included), base = train.pretrain.steps (0 without), stage k starting at
// base + Σ_{j<k} steps_j and C = Σ steps_j, the batch of update s comes
// from
//
//	s < base:                the training source, at its own step s
//	base ≤ s < base + C:     stage k's source, at its own step s − start_k
//	s ≥ base + C:            the training source, at its own step s − C
//
// so that a resumed run draws the batches of an uninterrupted one.

// Curriculum is the Source of a run with train.curriculum.
type Curriculum struct {
	srcs   []Source // the stages' sources, then the training source
	starts []int    // run step at which each stage starts; starts[len] = base + C
	base   int
	step   int // run step of the next batch
}

// NewCurriculum returns main itself when tc has no curriculum; otherwise a
// Curriculum over main and the sources stage(len, batch) makes for each
// stage of tc.Curriculum.
func NewCurriculum(tc *model.TrainConfig, main Source, stage func(len, batch int) (Source, error)) (Source, error) {
	if len(tc.Curriculum) == 0 {
		return main, nil
	}
	c := &Curriculum{}
	if tc.Pretrain != nil {
		c.base = tc.Pretrain.Steps
	}
	at := c.base
	for i, st := range tc.Curriculum {
		s, err := stage(st.Len, st.BatchSize)
		if err != nil {
			return nil, fmt.Errorf("train.curriculum[%d]: %w", i, err)
		}
		c.srcs = append(c.srcs, s)
		c.starts = append(c.starts, at)
		at += st.Steps
	}
	c.srcs = append(c.srcs, main)
	c.starts = append(c.starts, at)
	return c, nil
}

// at returns the source of run step s and its own step there.
func (c *Curriculum) at(s int) (Source, int) {
	n := len(c.srcs) - 1
	switch {
	case s < c.base:
		return c.srcs[n], s
	case s >= c.starts[n]:
		return c.srcs[n], s - (c.starts[n] - c.base)
	}
	k := 0
	for k+1 < n && s >= c.starts[k+1] {
		k++
	}
	return c.srcs[k], s - c.starts[k]
}

// Next fills b with the batch of the next run step.
func (c *Curriculum) Next(b *data.Batch) error {
	src, _ := c.at(c.step)
	if err := src.Next(b); err != nil {
		return err
	}
	c.step++
	return nil
}

// State is the state of the source of the next batch.
func (c *Curriculum) State() (json.RawMessage, error) {
	src, _ := c.at(c.step)
	return src.State()
}

// Restore positions the source of run step step at its own step there.
func (c *Curriculum) Restore(step int, state json.RawMessage) error {
	c.step = step
	src, own := c.at(step)
	return src.Restore(own, state)
}
