package onnx

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// Options are Export's settings.
type Options struct {
	F16     bool              // weights stored as float16 (cast to float32 in the graph)
	Version string            // the producer version written into the file
	Meta    map[string]string // metadata entries (label names, step)
	// DataName is the external data file's name, beside the model file,
	// used when the weights pass protobuf's 2 GiB limit (default
	// "model.onnx.data").
	DataName string
}

// File is an export: the ONNX model and, for weights past protobuf's
// 2 GiB limit, the external data file DataName its tensors point into.
type File struct {
	Model    []byte
	Data     []byte // nil when every tensor is inline
	DataName string
}

// inlineMax is the most initializer bytes kept inside the model file:
// protobuf's 2 GiB limit on a message, less room for the graph. A
// variable so that the tests can lower it.
var inlineMax = 1<<31 - 1<<26

// Export returns the ONNX file of model m's inference forward: input
// tokens [batch, seq] int64, output logits ([batch, seq, vocab_size] for
// lm and tag, [batch, n_classes or d_model] for classify and embed), both
// axes dynamic up to max_len. Weights past protobuf's 2 GiB limit go to an
// external data file (File.Data). What the graph cannot express is an
// error naming it.
func Export(m *model.Model[float32], o Options) (*File, error) {
	c := m.Config
	rule, ok := rules[c.Mixer.Kind]
	if !ok {
		return nil, fmt.Errorf("onnx: mixer kind %q has no export rule (tokenmix mixers lists the kinds; %s)", c.Mixer.Kind, Supported())
	}
	g := NewGraph(o.F16)
	x := &ctx{g: g, m: m, c: c}
	tok := g.Input("tokens", Int64, "batch", "seq")
	x.tok = tok
	shape := g.Op("Shape", []string{tok})
	x.T = g.Op("Gather", []string{shape, g.IntScalar(1)}, AInt("axis", 0))
	x.T1 = g.Op("Unsqueeze", []string{x.T, g.Ints(0)})
	if c.PadID != nil {
		x.keep = g.Op("Not", []string{g.Op("Equal", []string{tok, g.IntScalar(int64(*c.PadID))})})
	}
	h := g.Op("Gather", []string{x.weight("embed.weight", false), tok}, AInt("axis", 0))
	pos := g.Op("Slice", []string{x.weight("pos.weight", false), g.Ints(0), x.T1, g.Ints(0)})
	h = g.Op("Add", []string{h, pos})
	// Reversible blocks (RevNet couplings): x1 = x2 = h; y1 = x1 +
	// mixer(LN1(x2)), y2 = x2 + FF(LN2(y1)); the mean of the two streams
	// goes on to LN_f.
	h2 := h
	for i := range c.NLayers {
		p := fmt.Sprintf("blocks.%d.", i)
		in := h
		if c.Reversible {
			in = h2
		}
		mix, err := rule(x, p+"mixer.", x.layerNorm(in, p+"ln1"))
		if err != nil {
			return nil, err
		}
		h = g.Op("Add", []string{h, mix})
		f := x.linear(x.gelu(x.linear(x.layerNorm(h, p+"ln2"), p+"ff.fc1")), p+"ff.fc2")
		if c.Reversible {
			h2 = g.Op("Add", []string{h2, f})
		} else {
			h = g.Op("Add", []string{h, f})
		}
	}
	if c.Reversible {
		h = g.Op("Mul", []string{g.Op("Add", []string{h, h2}), g.Scalar(0.5)})
	}
	h = x.layerNorm(h, "ln_f")
	var logits string
	var dims []any
	switch c.Task {
	case "lm", "tag":
		logits, dims = x.linear(h, "head"), []any{"batch", "seq", outWidth(c)}
	default: // classify, embed: the pooled rows
		logits, dims = x.linear(x.pool(h), "head"), []any{"batch", outWidth(c)}
	}
	if x.err != nil {
		return nil, x.err
	}
	g.Output(logits, "logits", Float, dims...)
	f := &File{}
	loc := ""
	if g.Size() > inlineMax {
		f.DataName = o.DataName
		if f.DataName == "" {
			f.DataName = "model.onnx.data"
		}
		loc = f.DataName
	}
	f.Model, f.Data = g.Model("tokenmix", o.Version, fmt.Sprintf("tokenmix %s model, mixer %s", c.Task, c.Mixer.Kind), o.Meta, loc)
	return f, nil
}

// outWidth is the logits' last dimension.
func outWidth(c *model.Config) int {
	switch c.Task {
	case "lm":
		return c.VocabSize
	case "embed":
		return c.DModel
	}
	return c.NClasses
}

// ctx is one export's state: the graph, the model, and values every
// layer shares (the length, the padding mask, attention masks).
type ctx struct {
	g     *Graph
	m     *model.Model[float32]
	c     *model.Config
	tok   string
	T, T1 string // the sequence length, as a scalar and as [1]
	keep  string // [B,T] bool, true at non-pad positions ("" without pad_id)
	cache map[string][]string
	err   error
}

// once returns the value key names, building it with f the first time.
func (x *ctx) once(key string, f func() string) string {
	return x.onceN(key, func() []string { return []string{f()} })[0]
}

// onceN is once for several values.
func (x *ctx) onceN(key string, f func() []string) []string {
	if x.cache == nil {
		x.cache = map[string][]string{}
	}
	if v, ok := x.cache[key]; ok {
		return v
	}
	v := f()
	x.cache[key] = v
	return v
}

// param returns the model's tensor name and its shape.
func (x *ctx) param(name string) ([]float32, []int) {
	w, spec, ok := x.m.Param(name)
	if !ok {
		if x.err == nil {
			x.err = fmt.Errorf("onnx: the model has no tensor %q", name)
		}
		return nil, nil
	}
	return w, spec.Shape
}

// weight adds tensor name as an initializer of the same name; transposed,
// a [out, in] linear weight is stored [in, out], as MatMul reads it.
func (x *ctx) weight(name string, transposed bool) string {
	w, shape := x.param(name)
	if w == nil {
		return name
	}
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	if transposed {
		r, cl := shape[0], shape[1]
		t := make([]float32, len(w))
		for i := range r {
			for j := range cl {
				t[j*r+i] = w[i*cl+j]
			}
		}
		w, dims = t, []int64{int64(cl), int64(r)}
	}
	return x.g.Weight(name, dims, w)
}

// linear is y = v·Wᵀ + b for the linear named prefix.
func (x *ctx) linear(v, prefix string) string {
	g := x.g
	return g.Op("Add", []string{g.Op("MatMul", []string{v, x.weight(prefix+".weight", true)}), x.weight(prefix+".bias", false)})
}

// layerNorm is LayerNorm over the channels with the gain and bias of
// prefix, eps 1e-5.
func (x *ctx) layerNorm(v, prefix string) string {
	return x.g.Op("LayerNormalization", []string{v, x.weight(prefix+".weight", false), x.weight(prefix+".bias", false)},
		AInt("axis", -1), AFloat("epsilon", 1e-5))
}

// gelu is the tanh GELU, ½v(1 + tanh(√(2/π)(v + 0.044715v³))).
func (x *ctx) gelu(v string) string {
	g := x.g
	v3 := g.Op("Mul", []string{g.Op("Mul", []string{v, v}), v})
	in := g.Op("Mul", []string{g.Op("Add", []string{v, g.Op("Mul", []string{v3, g.Scalar(0.044715)})}), g.Scalar(float32(math.Sqrt(2 / math.Pi)))})
	return g.Op("Mul", []string{g.Op("Mul", []string{v, g.Scalar(0.5)}), g.Op("Add", []string{g.Op("Tanh", []string{in}), g.Scalar(1)})})
}

// keepF is the non-pad positions as float [B,T,1] (1 or 0).
func (x *ctx) keepF() string {
	return x.once("keepF", func() string {
		g := x.g
		return g.Op("Unsqueeze", []string{g.Op("Cast", []string{x.keep}, AInt("to", Float)), g.Ints(2)})
	})
}

// pool is the classify and embed read-out of h [B,T,D]: the mean over the
// non-pad positions (zero rows for an all-pad sequence), or position 0.
func (x *ctx) pool(h string) string {
	g := x.g
	if x.c.Pool == "first" {
		return g.Op("Gather", []string{h, g.IntScalar(0)}, AInt("axis", 1))
	}
	if x.keep == "" {
		return g.Op("ReduceMean", []string{h}, AInts("axes", 1), AInt("keepdims", 0))
	}
	k := x.keepF()
	sum := g.Op("ReduceSum", []string{g.Op("Mul", []string{h, k}), g.Ints(1)}, AInt("keepdims", 0))
	n := g.Op("ReduceSum", []string{k, g.Ints(1)}, AInt("keepdims", 0))
	return g.Op("Div", []string{sum, g.Op("Max", []string{n, g.Scalar(1)})})
}

// positions is 0…T−1 as int64 [T].
func (x *ctx) positions() string {
	return x.once("positions", func() string {
		g := x.g
		return g.Op("Range", []string{g.IntScalar(0), x.T, g.IntScalar(1)})
	})
}

// offsets is j − i as int64 [T,T] (row i, column j).
func (x *ctx) offsets() string {
	return x.once("offsets", func() string {
		g := x.g
		p := x.positions()
		return g.Op("Sub", []string{g.Op("Unsqueeze", []string{p, g.Ints(0)}), g.Op("Unsqueeze", []string{p, g.Ints(1)})})
	})
}

// allowed is the keys query i may see: j ≤ i when causal, never a pad
// key, as bool broadcastable to [B,1,T,T]; "" when every key is allowed.
func (x *ctx) allowed() string {
	return x.once("allowed", func() string {
		g := x.g
		var a string
		if x.c.Causal {
			a = g.Op("LessOrEqual", []string{x.offsets(), g.IntScalar(0)}) // [T,T]
		}
		if x.keep != "" {
			k := g.Op("Unsqueeze", []string{x.keep, g.Ints(1, 2)}) // [B,1,1,T]
			if a == "" {
				a = k
			} else {
				a = g.Op("And", []string{k, a})
			}
		}
		return a
	})
}

// heads reshapes v [B,T,D] to [B,H,T,Dh].
func (x *ctx) heads(v string, H int) string {
	g := x.g
	r := g.Op("Reshape", []string{v, g.Ints(0, 0, int64(H), int64(x.c.DModel/H))})
	return g.Op("Transpose", []string{r}, AInts("perm", 0, 2, 1, 3))
}

// merge reshapes v [B,H,T,Dh] back to [B,T,D].
func (x *ctx) merge(v string) string {
	g := x.g
	t := g.Op("Transpose", []string{v}, AInts("perm", 0, 2, 1, 3))
	return g.Op("Reshape", []string{t, g.Ints(0, 0, int64(x.c.DModel))})
}

// opts returns a copy of the mixer options, so that reading them here
// does not mark them read in the model's config.
func (x *ctx) opts() mixer.Options {
	return mixer.NewOptions(x.c.Mixer.Kind, x.c.Mixer.Raw())
}
