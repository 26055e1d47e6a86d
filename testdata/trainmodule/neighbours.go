// Package trainmodule is a program of a tokenmix user: it defines a mixer
// kind of its own and trains models through tokenmix.Train
// (TestTrainModule in the tokenmix module builds and tests it).
package trainmodule

import (
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// neighbours mixes each position with its two neighbours, channel by
// channel: out_t = prev ⊙ x_{t−1} + next ⊙ x_{t+1} (zero past the ends),
// with learned gains prev and next [D].
type neighbours[F float32 | float64] struct {
	d            int
	prev, next   []F
	dprev, dnext []F
}

func (m *neighbours[F]) Params() []mixer.ParamSpec {
	return []mixer.ParamSpec{
		{Name: "prev", Shape: []int{m.d}, Init: mixer.InitConst, Value: 0.5, NoDecay: true},
		{Name: "next", Shape: []int{m.d}, Init: mixer.InitConst, Value: 0.5, NoDecay: true},
	}
}

func (m *neighbours[F]) Bind(w, g [][]F) {
	m.prev, m.next, m.dprev, m.dnext = w[0], w[1], g[0], g[1]
}

func (m *neighbours[F]) ActSize(b, t int) int        { return 0 }
func (m *neighbours[F]) ScratchSize(b, t, _ int) int { return 0 }

func (m *neighbours[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	D := m.d
	for b := range p.B {
		for t := range p.T {
			o := out[(b*p.T+t)*D : (b*p.T+t+1)*D]
			clear(o)
			if t > 0 {
				xp := x[(b*p.T+t-1)*D:]
				for c := range D {
					o[c] += m.prev[c] * xp[c]
				}
			}
			if t+1 < p.T {
				xn := x[(b*p.T+t+1)*D:]
				for c := range D {
					o[c] += m.next[c] * xn[c]
				}
			}
		}
	}
}

func (m *neighbours[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	D := m.d
	for b := range p.B {
		for t := range p.T {
			g := dout[(b*p.T+t)*D : (b*p.T+t+1)*D]
			if t > 0 {
				i := (b*p.T + t - 1) * D
				for c := range D {
					dx[i+c] += m.prev[c] * g[c]
					m.dprev[c] += x[i+c] * g[c]
				}
			}
			if t+1 < p.T {
				i := (b*p.T + t + 1) * D
				for c := range D {
					dx[i+c] += m.next[c] * g[c]
					m.dnext[c] += x[i+c] * g[c]
				}
			}
		}
	}
}

func init() {
	err := registry.Add(mixer.Kind{Name: "neighbours", Bidirectional: true, Paper: "a user's mixer",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return &neighbours[float32]{d: c.D}, c.Opts.Err() },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return &neighbours[float64]{d: c.D}, c.Opts.Err() },
		Tests: []mixer.TestCase{{Name: "bidirectional", D: 4, Heads: 1, B: 2, T: 5}}})
	if err != nil {
		panic(err)
	}
}
