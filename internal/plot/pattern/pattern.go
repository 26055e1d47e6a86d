package pattern

import (
	"fmt"

	"github.com/tokenmix/tokenmix/mixer"
)

// Connectivity is implemented by mixers whose allowed query–key pairs depend
// only on positions (full, strided, fixed: attn.Attention).
type Connectivity interface {
	// Connectivity returns head h's allowed pairs at length T as a [T,T]
	// row-major matrix, query rows and key columns (padding aside).
	Connectivity(h, T int) []bool
}

// Weights is implemented by mixers whose attention depends on the input
// (top-k, entmax, LSH). They report the attention weights of one forward
// pass, which Maps renders as a heat map.
type Weights interface {
	// AttentionWeights returns, per head, the [T,T] row-major attention
	// weights in [0,1] of a forward pass on x [1,T,D] with the mixer's
	// bound parameters.
	AttentionWeights(x []float64, T int) [][]float64
}

// Map is one panel's values: [T,T] row-major in [0,1], 1 drawn darkest.
// A Heat map (attention weights, see WeightMap) is drawn with HeatColour,
// exact zeros white, and labelled with Zeros, its fraction of exact zeros.
type Map struct {
	Layer, Head int
	T           int
	V           []float64
	Heat        bool
	Zeros       float64
}

// WeightMap returns the heat map of attention weights v [T,T] of one layer
// and head, with Zeros the fraction of exact zeros among the causally
// allowed cells (j ≤ i when causal, all T² otherwise): cells a pattern or an
// exact sparse normaliser (entmax, top-k) leaves at 0 count, the causal mask
// does not. WeightMap panics if len(v) != T·T.
func WeightMap(layer, head, T int, v []float64, causal bool) Map {
	if len(v) != T*T {
		panic(fmt.Sprintf("pattern: %d weights for T=%d", len(v), T))
	}
	zeros, n := 0, 0
	for i := 0; i < T; i++ {
		for j := 0; j < T; j++ {
			if causal && j > i {
				continue
			}
			n++
			if v[i*T+j] == 0 {
				zeros++
			}
		}
	}
	return Map{Layer: layer, Head: head, T: T, V: v, Heat: true, Zeros: float64(zeros) / float64(n)}
}

// Maps builds kind k for every layer 0…nLayers−1 of config c (c.Layer is
// overwritten) and returns each layer's and head's map at length T: the
// allowed matrix (1 allowed, 0 not) for a Connectivity mixer, or the weights
// of a forward pass on x [1,T,D] for a Weights mixer (x may be nil for
// Connectivity mixers; a Weights mixer gets its parameters from bind, which
// must then not be nil). Maps returns an error if the mixer cannot be built
// or implements neither interface.
func Maps(k mixer.Kind, c mixer.Config, nLayers, T int, x []float64, bind func(m mixer.Mixer[float64])) ([][]Map, error) {
	if T < 1 {
		return nil, fmt.Errorf("pattern: length %d < 1", T)
	}
	var out [][]Map
	for l := 0; l < nLayers; l++ {
		cl := c
		cl.Layer = l
		m, err := k.New64(cl)
		if err != nil {
			return nil, err
		}
		var row []Map
		switch mm := m.(type) {
		case Connectivity:
			for h := 0; h < c.Heads; h++ {
				a := mm.Connectivity(h, T)
				v := make([]float64, T*T)
				for i, ok := range a {
					if ok {
						v[i] = 1
					}
				}
				row = append(row, Map{Layer: l, Head: h, T: T, V: v})
			}
		case Weights:
			if bind == nil || x == nil {
				return nil, fmt.Errorf("pattern: kind %q draws attention weights and needs parameters and an input", k.Name)
			}
			bind(m)
			for h, v := range mm.AttentionWeights(x, T) {
				row = append(row, WeightMap(l, h, T, v, c.Causal))
			}
		default:
			return nil, fmt.Errorf("pattern: kind %q has no attention pattern to draw", k.Name)
		}
		out = append(out, row)
	}
	return out, nil
}
