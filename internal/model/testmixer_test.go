package model

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// cumMean is a test-only mixer: out[b,t] = o(mean of x[b,j] over allowed
// keys j), where j is allowed if it is not padding and, when causal, j ≤ t.
// It mixes tokens, honours causality and padding and has a residual
// projection, so model tests do not depend on the real mixers.
type cumMean[F kernels.Float] struct {
	d      int
	causal bool
	w, g   [][]F
}

func (m *cumMean[F]) Params() []mixer.ParamSpec   { return mixer.Linear("o", m.d, m.d, true) }
func (m *cumMean[F]) Bind(w, g [][]F)             { m.w, m.g = w, g }
func (m *cumMean[F]) ActSize(b, t int) int        { return b * t * m.d }
func (m *cumMean[F]) ScratchSize(b, t, _ int) int { return b * t * m.d }

func (m *cumMean[F]) allowed(p mixer.Pass, b, t, j int) bool {
	return p.Allowed(b, j) && (!m.causal || j <= t)
}

func (m *cumMean[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	D := m.d
	for b := 0; b < p.B; b++ {
		for t := 0; t < p.T; t++ {
			u := act[(b*p.T+t)*D : (b*p.T+t+1)*D]
			clear(u)
			n := 0
			for j := 0; j < p.T; j++ {
				if m.allowed(p, b, t, j) {
					kernels.AddTo(1, u, x[(b*p.T+j)*D:(b*p.T+j+1)*D])
					n++
				}
			}
			for k := range u {
				if n > 0 {
					u[k] /= F(n)
				}
			}
		}
	}
	kernels.LinearForward(mixer.Budget(p.Threads), kernels.PrecFP32, out, act, m.w[0], nil, m.w[1], p.B*p.T, D, D, false)
}

func (m *cumMean[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	D := m.d
	du := scratch[:p.B*p.T*D]
	clear(du)
	kernels.LinearBackward(mixer.Budget(p.Threads), kernels.PrecFP32, du, m.g[0], m.g[1], dout, act, m.w[0], p.B*p.T, D, D, false)
	for b := 0; b < p.B; b++ {
		for t := 0; t < p.T; t++ {
			n := 0
			for j := 0; j < p.T; j++ {
				if m.allowed(p, b, t, j) {
					n++
				}
			}
			for j := 0; j < p.T; j++ {
				if m.allowed(p, b, t, j) {
					g := du[(b*p.T+t)*D : (b*p.T+t+1)*D]
					d := dx[(b*p.T+j)*D : (b*p.T+j+1)*D]
					for k := range d {
						d[k] += g[k] / F(n)
					}
				}
			}
		}
	}
}

func newCumMean[F kernels.Float](c mixer.Config) (*cumMean[F], error) {
	// "strict" is a test option so config tests see option errors.
	c.Opts.Bool("strict", false)
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	return &cumMean[F]{d: c.D, causal: c.Causal}, nil
}

var cumMeanKind = mixer.Kind{
	Name: "cummean", Causal: true, Bidirectional: true, KeyPadding: true,
	New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return newCumMean[float32](c) },
	New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return newCumMean[float64](c) },
}

// causalOnlyKind exercises the capability check.
var causalOnlyKind = mixer.Kind{Name: "causalonly", Causal: true, New32: cumMeanKind.New32, New64: cumMeanKind.New64}

// testLookup finds the test mixers, then the registry.
func testLookup(name string) (mixer.Kind, error) {
	switch name {
	case "cummean":
		return cumMeanKind, nil
	case "causalonly":
		return causalOnlyKind, nil
	}
	return registry.Lookup(name)
}

// testConfig parses a config with the test lookup, failing loudly.
func testConfig(js string) *Config {
	c, err := ParseConfigWith([]byte(js), testLookup)
	if err != nil {
		panic(fmt.Sprintf("testConfig: %v", err))
	}
	return c
}
