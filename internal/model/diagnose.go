package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// Diagnose runs a forward and a backward pass on a batch with a check after
// every layer and every parameter gradient, and returns the name of the
// first tensor, in the order of computation, that holds a non-finite value:
// a parameter ("blocks.1.ff.fc1.weight: parameter"), a layer's output
// ("blocks.1.mixer: output"), an input gradient ("blocks.1.ff backward:
// input gradient") or a parameter gradient ("blocks.1.ff.fc1.weight:
// gradient"); "" when every value is finite. Normal passes skip these
// checks. With targets it replays a training step at m.Step (Train, so
// with the step's dropout masks). Diagnose leaves the gradients of its
// backward in Grads.
func (m *Model[F]) Diagnose(tokens, targets []int32, B, T int) (string, error) {
	for i, s := range m.Specs {
		if j := nonFinite(m.Params[m.Offsets[i] : m.Offsets[i]+s.Size()]); j >= 0 {
			return fmt.Sprintf("%s: parameter (element %d)", s.Name, j), nil
		}
	}
	first := ""
	m.inspect = func(name string, x []F) {
		if first == "" {
			if j := nonFinite(x); j >= 0 {
				first = fmt.Sprintf("%s (element %d)", name, j)
			}
		}
	}
	m.Train = targets != nil
	defer func() { m.inspect, m.Train = nil, false }()
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		return "", err
	}
	if first == "" && (math.IsNaN(loss) || math.IsInf(loss, 0)) {
		first = fmt.Sprintf("loss: %v", loss)
	}
	if targets != nil {
		m.ZeroGrad()
		m.Backward()
	}
	return first, nil
}

// inspectGrads shows inspect the gradient of every parameter whose name
// starts with one of prefixes.
func (m *Model[F]) inspectGrads(prefixes ...string) {
	if m.inspect == nil {
		return
	}
	for i, s := range m.Specs {
		for _, p := range prefixes {
			if strings.HasPrefix(s.Name, p) {
				m.inspect(s.Name+": gradient", m.Grads[m.Offsets[i]:m.Offsets[i]+s.Size()])
				break
			}
		}
	}
}

// nonFinite returns the index of x's first NaN or infinity, or −1.
func nonFinite[F kernels.Float](x []F) int {
	for i, v := range x {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return i
		}
	}
	return -1
}

// MixerStats collects the mixer.Stats of every block that reports them
// (e.g. entmax's per-head α and fraction of exact zeros), keyed
// "blocks.{i}.{stat}", from the model's last forward pass. It returns nil
// when no mixer reports anything.
func (m *Model[F]) MixerStats() map[string]float64 {
	var out map[string]float64
	for i := 0; i < m.Config.NLayers; i++ {
		s, ok := m.Mixer(i).(mixer.Stats)
		if !ok {
			continue
		}
		for k, v := range s.Stats() {
			if out == nil {
				out = map[string]float64{}
			}
			out[fmt.Sprintf("blocks.%d.%s", i, k)] = v
		}
	}
	return out
}
