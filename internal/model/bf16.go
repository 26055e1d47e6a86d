package model

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// blockBF16 is one block's feed-forward weights packed in bf16.
type blockBF16 struct {
	w1, w2 kernels.BF16B // fc1 [D→d_ff], fc2 [d_ff→D]
}

// fc1 and fc2 are the packed weights, or nil for a nil receiver (the model
// is not in bf16 inference).
func (b *blockBF16) fc1() *kernels.BF16B {
	if b == nil {
		return nil
	}
	return &b.w1
}

func (b *blockBF16) fc2() *kernels.BF16B {
	if b == nil {
		return nil
	}
	return &b.w2
}

// UseBF16 switches a float32 model to bf16 inference: the feed-forward,
// head and mixer projection weights are packed in bf16 once, and every
// later forward pass and decoding step multiplies bf16 and accumulates in
// float32, and so do full attention's score and value products where the
// bf16 path packs its operands (see attn's UseBF16). Embeddings,
// LayerNorms, the other mixers' cores (sparse attention's scores, AFT's
// sums, the FFT) and the loss stay in float32. The packed copies do
// not follow later changes of the weights: a model in bf16 inference is
// not trained. UseBF16 returns an error for a float64 model or a mixer kind
// without the bf16 path.
func (m *Model[F]) UseBF16() error {
	var z F
	if _, ok := any(z).(float32); !ok {
		return fmt.Errorf("model: bf16 inference needs a float32 model")
	}
	c := m.Config
	D, H, th := c.DModel, c.DFF, m.threads()
	for i, mx := range m.mixers {
		bi, ok := mx.(mixer.BF16Inference)
		if !ok {
			if len(mx.Params()) == 0 {
				continue // nothing to multiply (FNet mixes by FFT)
			}
			return fmt.Errorf("model: mixer kind %q has no bf16 path", c.kind.Name)
		}
		if err := bi.UseBF16(th); err != nil {
			return fmt.Errorf("model: block %d: %w", i, err)
		}
	}
	m.plan.B = 0 // a mixer's scratch may have changed: the next pass plans again
	m.bf16 = make([]blockBF16, c.NLayers)
	for i := range m.bf16 {
		bw := &m.w.blocks[i]
		kernels.PackBF16B(th, &m.bf16[i].w1, true, D, H, any(bw.fc1w).([]float32), D)
		kernels.PackBF16B(th, &m.bf16[i].w2, true, H, D, any(bw.fc2w).([]float32), H)
	}
	m.headBF16 = new(kernels.BF16B)
	kernels.PackBF16B(th, m.headBF16, true, D, c.HeadOut(), any(m.w.headw).([]float32), D)
	return nil
}

// packed returns block i's bf16 feed-forward weights, or nil outside bf16
// inference.
func (m *Model[F]) packed(i int) *blockBF16 {
	if m.bf16 == nil {
		return nil
	}
	return &m.bf16[i]
}
