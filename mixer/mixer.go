package mixer

import (
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Mixer is a token-mixing layer: full attention, sparse attention, AFT, FNet…
//
// Shapes: B batch, T time (T ≤ Config.MaxLen), D = Config.D channels.
type Mixer[F kernels.Float] interface {
	// Params lists the mixer's parameters, with names relative to the mixer
	// (e.g. "q.weight"; the model prefixes "blocks.{i}.mixer.").
	Params() []ParamSpec
	// Bind gives the mixer its parameter and gradient storage, one slice per
	// ParamSpec in order, each of the spec's size. It is called once before
	// Forward.
	Bind(w, g [][]F)
	// ActSize is the number of elements Forward saves for Backward.
	ActSize(b, t int) int
	// ScratchSize is the number of elements of temporary workspace Forward
	// and Backward need on passes of thread budget threads (Pass.Threads:
	// per-thread work space grows with it; 0 is the default budget); its
	// contents do not survive between calls.
	ScratchSize(b, t, threads int) int
	// Forward writes out [B,T,D] from x [B,T,D], filling act for Backward.
	// It must not modify x.
	Forward(out, act, scratch, x []F, p Pass)
	// Backward accumulates the gradient into dx [B,T,D] and into the bound
	// parameter gradients, given dout [B,T,D] and the x and act of the
	// matching Forward (same Pass). It must not modify dout, act or x.
	Backward(dx, scratch, dout, act, x []F, p Pass)
}

// Pass describes one forward/backward call.
type Pass struct {
	B, T int
	// Pad marks excluded key positions, [B*T] (true = padding), or is nil.
	Pad []bool
	// Seed seeds anything random in the layer (e.g. LSH rotations). Forward
	// and Backward get the same Seed, so randomness replays exactly.
	Seed uint64
	// Threads is the call's thread budget: at most this many threads (the
	// caller's and idle pool workers) work on it, and the work splits
	// depend only on it, never on other passes running at the same time.
	// The model sets its own budget; 0 is the default budget (see Budget).
	// Forward and Backward get the same Threads, the one ScratchSize was
	// asked for.
	Threads int
}

// Budget resolves a thread budget: threads itself when it is at least 1,
// else the default budget, parallel.Threads() at the time of the call (the
// CLI's --threads).
func Budget(threads int) int {
	if threads >= 1 {
		return threads
	}
	return parallel.Threads()
}

// Allowed reports whether key position j of sequence b may be attended to
// (it is not padding).
func (p Pass) Allowed(b, j int) bool {
	return p.Pad == nil || !p.Pad[b*p.T+j]
}

// InitKind says how a parameter is initialised.
type InitKind int

const (
	InitNormal   InitKind = iota // N(0, 0.02²), GPT-2 style
	InitResidual                 // N(0, (0.02/√(2·n_layers))²): projections into the residual stream
	InitZeros
	InitOnes
	InitConst // every element = ParamSpec.Value
)

// ParamSpec names and shapes one parameter tensor.
type ParamSpec struct {
	Name  string
	Shape []int
	Init  InitKind
	Value float64 // for InitConst
	// NoDecay excludes the parameter from AdamW weight decay (biases, gains,
	// positional and relative biases, α parameters).
	NoDecay bool
}

// Size is the number of elements of the parameter.
func (s ParamSpec) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// Linear returns the weight [out,in] and bias [out] specs of a linear layer
// named name (y = x·Wᵀ + b, as in PyTorch's nn.Linear).
func Linear(name string, out, in int, residual bool) []ParamSpec {
	k := InitNormal
	if residual {
		k = InitResidual
	}
	return []ParamSpec{
		{Name: name + ".weight", Shape: []int{out, in}, Init: k},
		{Name: name + ".bias", Shape: []int{out}, Init: InitZeros, NoDecay: true},
	}
}

// Stats is implemented by mixers that report observations after a forward
// pass, e.g. learned α per head or attention sparsity. Keys are short names
// such as "alpha/h0" or "zeros/h1".
type Stats interface {
	Stats() map[string]float64
}

// BF16Inference is implemented by mixers whose matrix products can run in
// bf16 for inference (tokenmix.WithPrecision("bf16")): UseBF16 packs the
// bound weights once, on at most threads threads (0: the default budget),
// and later forward passes and decoding steps multiply bf16 and accumulate
// in float32. The packed copy does not follow later changes of the
// weights: a mixer in bf16 inference is not trained.
type BF16Inference interface {
	UseBF16(threads int) error
}

// SplitMix is SplitMix64's output function of x + 0x9e3779b97f4a7c15: the
// seed mixer of the model's per-pass seeds (model.PassSeed) and of LSH's
// counter-based rotations (docs/model.md, "LSH rotations").
func SplitMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
