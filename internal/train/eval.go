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
