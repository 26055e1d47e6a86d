package model

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// blockParams are one block's own tensors (the mixer binds its own).
type blockParams[F kernels.Float] struct {
	ln1w, ln1b, ln2w, ln2b []F // [D]
	fc1w                   []F // [DFF,D]
	fc1b                   []F // [DFF]
	fc2w                   []F // [D,DFF]
	fc2b                   []F // [D]
}

// params are views of every model tensor into one slab (parameters or
// gradients), in the order of Model.Specs.
type params[F kernels.Float] struct {
	embed  []F // [V,D]
	pos    []F // [maxT,D]
	blocks []blockParams[F]
	mixer  [][][]F // per block, per mixer ParamSpec
	lnfw   []F     // [D]
	lnfb   []F     // [D]
	headw  []F     // [HeadOut,D]
	headb  []F     // [HeadOut]
}

// paramSpecs lists every parameter with its full name, in slab order:
// embed, pos, then per block ln1, mixer, ln2, ff.fc1, ff.fc2, then ln_f and
// head. mixerSpecs[i] are block i's mixer specs.
func paramSpecs(c *Config, mixerSpecs [][]mixer.ParamSpec) []mixer.ParamSpec {
	D := c.DModel
	ln := func(name string) []mixer.ParamSpec {
		return []mixer.ParamSpec{
			{Name: name + ".weight", Shape: []int{D}, Init: mixer.InitOnes, NoDecay: true},
			{Name: name + ".bias", Shape: []int{D}, Init: mixer.InitZeros, NoDecay: true},
		}
	}
	s := []mixer.ParamSpec{
		{Name: "embed.weight", Shape: []int{c.VocabSize, D}, Init: mixer.InitNormal},
		{Name: "pos.weight", Shape: []int{c.MaxLen, D}, Init: mixer.InitNormal, NoDecay: true},
	}
	for i := 0; i < c.NLayers; i++ {
		pre := fmt.Sprintf("blocks.%d.", i)
		s = append(s, ln(pre+"ln1")...)
		for _, p := range mixerSpecs[i] {
			p.Name = pre + "mixer." + p.Name
			s = append(s, p)
		}
		s = append(s, ln(pre+"ln2")...)
		s = append(s, mixer.Linear(pre+"ff.fc1", c.DFF, D, false)...)
		s = append(s, mixer.Linear(pre+"ff.fc2", D, c.DFF, true)...)
	}
	s = append(s, ln("ln_f")...)
	s = append(s, mixer.Linear(c.HeadName(), c.HeadOut(), D, false)...)
	return s
}

// views cuts slab into the tensors of specs (as laid out by paramSpecs).
func views[F kernels.Float](c *Config, specs []mixer.ParamSpec, nMixer []int, slab []F) params[F] {
	off := 0
	next := func() []F {
		n := specs[0].Size()
		specs = specs[1:]
		v := slab[off : off+n : off+n]
		off += n
		return v
	}
	var p params[F]
	p.embed, p.pos = next(), next()
	for i := 0; i < c.NLayers; i++ {
		var b blockParams[F]
		b.ln1w, b.ln1b = next(), next()
		var mw [][]F
		for j := 0; j < nMixer[i]; j++ {
			mw = append(mw, next())
		}
		b.ln2w, b.ln2b = next(), next()
		b.fc1w, b.fc1b = next(), next()
		b.fc2w, b.fc2b = next(), next()
		p.blocks = append(p.blocks, b)
		p.mixer = append(p.mixer, mw)
	}
	p.lnfw, p.lnfb = next(), next()
	p.headw, p.headb = next(), next()
	return p
}

// InitStd is the GPT-2 initialisation standard deviation.
const InitStd = 0.02

// Init fills the parameters GPT-2 style from seed: N(0, 0.02²) for
// InitNormal, N(0, (0.02/√(2·n_layers))²) for InitResidual (fc2 and the
// mixers' output projections), ones, zeros or constants. Each tensor draws
// from its own stream keyed by (seed, name), so adding a tensor does not
// change the others.
func (m *Model[F]) Init(seed uint64) {
	for i, s := range m.Specs {
		InitTensor(m.Params[m.Offsets[i]:m.Offsets[i]+s.Size()], s, seed, m.Config.NLayers)
	}
}

// InitTensor fills w with parameter s's initial values as Model.Init does
// for a model of nLayers blocks: the stream is keyed by (seed, s.Name).
// InitTensor panics if s.Init is unknown.
func InitTensor[F kernels.Float](w []F, s mixer.ParamSpec, seed uint64, nLayers int) {
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	switch s.Init {
	case mixer.InitNormal, mixer.InitResidual:
		std := InitStd
		if s.Init == mixer.InitResidual {
			std = InitStd / math.Sqrt(2*float64(nLayers))
		}
		for j := range w {
			w[j] = F(rng.NormFloat64() * std)
		}
	case mixer.InitZeros:
		clear(w)
	case mixer.InitOnes:
		for j := range w {
			w[j] = 1
		}
	case mixer.InitConst:
		for j := range w {
			w[j] = F(s.Value)
		}
	default:
		panic(fmt.Sprintf("model: parameter %s has unknown init kind %d", s.Name, s.Init))
	}
}

// AdoptBody copies every parameter of src except its head into m, by
// name, and fills m's head with its initial values from seed (Init's
// streams): the switch from a pretraining stage's model (built from
// Config.PretrainStage) to the task's. It returns an error naming the
// first tensor that src lacks or whose shape differs.
func (m *Model[F]) AdoptBody(src *Model[F], seed uint64) error {
	head := m.Config.HeadName() + "."
	for i, s := range m.Specs {
		dst := m.ParamAt(i)
		if strings.HasPrefix(s.Name, head) {
			InitTensor(dst, s, seed, m.Config.NLayers)
			continue
		}
		w, sp, ok := src.Param(s.Name)
		if !ok {
			return fmt.Errorf("model: %s: missing from the pretrained model", s.Name)
		}
		if !slices.Equal(sp.Shape, s.Shape) {
			return fmt.Errorf("model: %s: shape %v in the pretrained model, want %v", s.Name, sp.Shape, s.Shape)
		}
		copy(dst, w)
	}
	return nil
}

// Param returns the slice of the parameter named name and its spec, or ok =
// false.
func (m *Model[F]) Param(name string) (w []F, spec mixer.ParamSpec, ok bool) {
	for i, s := range m.Specs {
		if s.Name == name {
			return m.Params[m.Offsets[i] : m.Offsets[i]+s.Size()], s, true
		}
	}
	return nil, mixer.ParamSpec{}, false
}

// Grad returns the gradient slice of the i-th parameter spec.
func (m *Model[F]) Grad(i int) []F {
	return m.Grads[m.Offsets[i] : m.Offsets[i]+m.Specs[i].Size()]
}

// ParamAt returns the value slice of the i-th parameter spec.
func (m *Model[F]) ParamAt(i int) []F {
	return m.Params[m.Offsets[i] : m.Offsets[i]+m.Specs[i].Size()]
}
