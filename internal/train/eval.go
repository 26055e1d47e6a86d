package train

import (
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// Forward is m's forward pass for data.Evaluate: the batch's padded
// [B,T] tokens in one call (no targets, so no loss is computed), returning
// m.Logits().
func Forward(m *model.Model[float32]) data.Forward {
	return func(b *data.Batch) ([]float32, error) {
		if _, err := m.Forward(b.Tokens, nil, b.B, b.T); err != nil {
			return nil, err
		}
		return m.Logits(), nil
	}
}

// Evaluate is data.Evaluate of split s of task on m during a training run
// of batches of B at length T: in batches of m.EvalBatch(B, T), so that
// the evaluation's forward never needs more memory than a training step,
// and maxBatches batches of B (0: the whole split) scaled to cover the
// same examples.
func Evaluate(m *model.Model[float32], task data.Task, s data.Split, B, T, maxBatches, bucket int) (data.Eval, error) {
	eb := m.EvalBatch(B, T)
	return data.Evaluate(Forward(m), task, s, eb, maxBatches*(B/eb), bucket)
}
