package tokenmix

import (
	"context"
	"fmt"
	"math"
)

// Embed returns each sequence's embedding, L2-normalised, d_model wide,
// so that the dot product of two embeddings is their cosine similarity:
// an embedder's (task "embed", trained on pairs {text, positive}) pooled
// and projected representation, or a classifier's pooled representation
// (the head's input). Other tasks are an error; other errors as Logits.
func (m *Model) Embed(ctx context.Context, seqs [][]int32) ([][]float32, error) {
	if m.cfg.Task != "embed" && m.cfg.Task != "classify" {
		return nil, fmt.Errorf("tokenmix: Embed needs an embedder (task \"embed\") or a classifier, this model's task is %q", m.cfg.Task)
	}
	out := make([][]float32, len(seqs))
	err := m.forEachOf(ctx, seqs, m.cfg.Task == "classify", func(i int, z []float32) {
		var s float64
		for _, v := range z {
			s += float64(v) * float64(v)
		}
		n := math.Sqrt(s) + 1e-12
		e := make([]float32, len(z))
		for k, v := range z {
			e[k] = float32(float64(v) / n)
		}
		out[i] = e
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
