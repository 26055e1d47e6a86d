package tokenmix

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
)

// checkWeights refuses, before they are read, weights of the model of
// config.json configJSON larger than o's budget.
func checkWeights(configJSON []byte, o options) error {
	mc, err := model.ParseConfig(configJSON)
	if err != nil {
		return fmt.Errorf("tokenmix: %w", err)
	}
	n, err := model.NeedOf(mc, 1, 1, o.threads, false)
	if err != nil {
		return fmt.Errorf("tokenmix: %w", err)
	}
	if w := weightBytes(n.NumParams, o.precision); w > o.maxMemory {
		return fmt.Errorf("tokenmix: the model's %d parameters need %s, over the memory budget of %s (WithMaxMemory)",
			n.NumParams, memstat.FormatBytes(w), memstat.FormatBytes(o.maxMemory))
	}
	return nil
}

// WeightBytes is the memory of the model's weights.
func (m *Model) WeightBytes() int64 { return weightBytes(m.net.NumParams(), m.cfg.Precision) }

// weightBytes is the memory of n float32 weights in inference precision
// p: with "bf16", their bf16 copies too (of the matrices; at most all).
func weightBytes(n int, p string) int64 {
	b := 4 * int64(n)
	if p == "bf16" {
		b += 2 * int64(n)
	}
	return b
}

// PassBytes is the planned memory of the workspace of one pass over B
// sequences of T tokens: the activations and scratch of a forward that no
// backward follows (the model package's ForwardPlan). The model keeps one workspace, sized by its
// largest pass so far (WorkspaceBytes). Logits, Classify, Score, Embed
// and Tag run their inputs in passes of at most 16384 tokens (maxBatchTokens),
// sequences of one length together.
func (m *Model) PassBytes(B, T int) int64 { return m.net.ForwardPlan(B, T).Bytes() }

// WorkspaceBytes is the memory the model's workspace holds after its
// last pass.
func (m *Model) WorkspaceBytes() int64 { return m.ws.Load() }

// StreamBytes bounds the memory a stream's decoding state holds once it
// has n tokens (a Stream of MaxTokens 0, as StartGeneration starts). A
// kind without a decoding state, which runs every prefix through the
// workspace, gives 0; its passes need PassBytes(1, n).
func (m *Model) StreamBytes(n int) int64 {
	b, ok := m.net.StateBytes(m.cfg.MaxLen, min(max(n, 1), m.cfg.MaxLen))
	if !ok {
		return 0
	}
	return b
}

// passBudget is the budget of one pass's workspace: the budget less the
// weights (0: no budget).
func (m *Model) passBudget() int64 {
	if m.budget <= 0 {
		return 0
	}
	return max(m.budget-m.WeightBytes(), 1)
}
