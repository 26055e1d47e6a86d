package registry_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// TestConformance runs the conformance suite on every registered kind with
// the test cases it declares; a kind without them fails.
func TestConformance(t *testing.T) {
	for _, k := range registry.All() {
		t.Run(k.Name, func(t *testing.T) { mixertest.RunKind(t, k) })
	}
}

// builtin is the kinds tokenmix registers, taken before any test adds
// one: the outside kinds of these tests compute in their own precision.
var builtin = registry.All()

// TestPrecisionConformance runs every built-in kind in precisions "bf16"
// and "fp16" on each of its test cases: outputs against the float64 mixer
// and gradients against its finite differences, within bf16 tolerance,
// with the scratch overwritten between Forward and Backward
// (mixertest.PrecisionAgrees).
func TestPrecisionConformance(t *testing.T) {
	for _, prec := range []string{"bf16", "fp16"} {
		for _, k := range builtin {
			for _, c := range mixertest.Cases(k) {
				t.Run(prec+"/"+k.Name+"/"+c.Name, func(t *testing.T) { mixertest.PrecisionAgrees(t, k, c, prec, bf16Tol) })
			}
		}
	}
}

// bf16Tol is the conformance tolerance of precision "bf16", about 25
// roundings of bf16 (2⁻⁹ each): the bf16 operands of the projections,
// scores and values compound. Over the declared cases the worst gradient
// error is 0.027 (strided attention) and the others stay below 0.025;
// fp16, which rounds only stored activations, stays below 0.002.
const bf16Tol = 5e-2

// float is the element types a mixer outside tokenmix implements.
type float interface{ ~float32 | ~float64 }

// shift is a mixer defined outside tokenmix, as a program would write it:
// out[t] = scale ⊙ x[t−1] (zero at t = 0 and where key t−1 is padding),
// causal only.
type shift[F float] struct {
	d    int
	w, g []F
}

func newShift[F float](c mixer.Config) (*shift[F], error) {
	if !c.Causal {
		return nil, errBidir
	}
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	return &shift[F]{d: c.D}, nil
}

var errBidir = errors.New("test_shift is causal only")

func (s *shift[F]) Params() []mixer.ParamSpec {
	return []mixer.ParamSpec{{Name: "scale.weight", Shape: []int{s.d}, Init: mixer.InitOnes, NoDecay: true}}
}
func (s *shift[F]) Bind(w, g [][]F)                 { s.w, s.g = w[0], g[0] }
func (s *shift[F]) ActSize(b, t int) int            { return 0 }
func (s *shift[F]) ScratchSize(b, t, _ int) int     { return 0 }
func (s *shift[F]) key(p mixer.Pass, b, t int) bool { return t > 0 && p.Allowed(b, t-1) }

func (s *shift[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	D := s.d
	for b := range p.B {
		for t := range p.T {
			o := out[(b*p.T+t)*D : (b*p.T+t+1)*D]
			if !s.key(p, b, t) {
				clear(o)
				continue
			}
			prev := x[(b*p.T+t-1)*D:]
			for i := range o {
				o[i] = s.w[i] * prev[i]
			}
		}
	}
}

func (s *shift[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	D := s.d
	for b := range p.B {
		for t := range p.T {
			if !s.key(p, b, t) {
				continue
			}
			do := dout[(b*p.T+t)*D:]
			prev := x[(b*p.T+t-1)*D:]
			dprev := dx[(b*p.T+t-1)*D:]
			for i := range D {
				dprev[i] += s.w[i] * do[i]
				s.g[i] += prev[i] * do[i]
			}
		}
	}
}

var shiftKind = mixer.Kind{
	Name: "test_shift", Causal: true, KeyPadding: true, PadInvariant: true,
	Paper: "a test kind defined outside tokenmix",
	New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return newShift[float32](c) },
	New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return newShift[float64](c) },
	Tests: []mixer.TestCase{
		{Name: "causal", D: 4, Heads: 1, Causal: true, B: 2, T: 5},
		{Name: "causal-pad", D: 4, Heads: 1, Causal: true, B: 2, T: 6, Pad: true},
	},
}

var (
	addShift sync.Once
	shiftErr error
)

// TestAddOutsideKind registers a kind through the public API, runs it
// through the conformance suite and builds a model with it; Add refuses
// incomplete kinds.
func TestAddOutsideKind(t *testing.T) {
	noTests := shiftKind
	noTests.Name, noTests.Tests = "test_untested", nil
	dup := shiftKind
	dup.Name = "full"
	noCtor := shiftKind
	noCtor.Name, noCtor.New64 = "test_noctor", nil
	for _, c := range []struct {
		k    mixer.Kind
		want string
	}{
		{noTests, `kind "test_untested" declares no test cases`},
		{dup, `kind "full" is already registered`},
		{noCtor, `kind "test_noctor" lacks New32 or New64`},
	} {
		if err := registry.Add(c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%s): %v, want %q", c.k.Name, err, c.want)
		}
	}
	if _, err := registry.Lookup("test_untested"); err == nil {
		t.Error("a refused kind was registered")
	}
	addShift.Do(func() { shiftErr = registry.Add(shiftKind) }) // once a process: go test -count=N runs tests again
	if shiftErr != nil {
		t.Fatal(shiftErr)
	}
	k, err := registry.Lookup("test_shift")
	if err != nil {
		t.Fatal(err)
	}
	mixertest.RunKind(t, k)
	cfg, err := model.ParseConfig([]byte(`{"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16,
		"max_len": 12, "causal": true, "task": "lm", "mixer": {"kind": "test_shift"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	if _, err := m.Forward(make([]int32, 12), make([]int32, 12), 1, 12); err != nil {
		t.Fatal(err)
	}
	if err := registry.Add(shiftKind); err == nil {
		t.Error("a second Add of the same kind: no error")
	}
}
