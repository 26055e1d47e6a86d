package mixer

// Kind is one registered mixer: its name, capabilities, constructors and
// the configurations the conformance suite checks it with. Constructors
// validate the Config (including every option) and return an error naming
// the offending key.
type Kind struct {
	Name string
	// Causal and Bidirectional say which masking modes the kind supports;
	// KeyPadding says it honours Pass.Pad (FNet does not: it mixes pads).
	Causal, Bidirectional, KeyPadding bool
	// PadInvariant says a sequence's outputs do not change when positions
	// are appended to it as padding (pad keys, or later positions under
	// causal masking), so sequences of different lengths may share a
	// padded batch; float32 results may still round differently (a
	// projection of at most 16 rows sums in another order). LSH's bucket
	// chunks depend on the padded length: false.
	PadInvariant bool
	// Decode says the kind's mixers implement Decoder (causal kinds only):
	// the conformance suite then checks that decoding position by position
	// and in chunks equals Forward.
	Decode bool
	// Paper is the citation shown by `tokenmix mixers` and in the docs.
	Paper string
	New32 func(Config) (Mixer[float32], error)
	New64 func(Config) (Mixer[float64], error)
	// Tests lists the configurations of the conformance suite for this
	// kind: at least one per supported masking mode, with padding where
	// KeyPadding. registry.Add refuses a kind without tests.
	Tests []TestCase
}

// TestCase is one configuration the conformance suite runs a kind with:
// shapes, determinism, causality (changing the future leaves the past
// unchanged), key padding, inputs not mutated, a second backward doubling
// the gradients, and float64 finite differences of every gradient.
type TestCase struct {
	Name string
	// D and Heads are the model dimensions; MaxLen defaults to T. Layer is
	// the block index (of Layer+1 blocks), for per-layer patterns.
	D, Heads, MaxLen, Layer int
	Causal                  bool
	// Opts are the kind's options.
	Opts map[string]any
	// B and T are the batch and sequence length of the check.
	B, T int
	// Pad marks some key positions as padding (kinds with KeyPadding), and
	// adds a run in which one sequence is entirely padding.
	Pad bool
	// Tol is the finite-difference tolerance (0: 1e-6) and Samples the
	// entries checked per tensor (0: 24).
	Tol     float64
	Samples int
	// Setup, if set, may overwrite the random float64 parameters and input
	// before the checks, e.g. to keep top-k or entmax supports away from
	// ties so that finite differences do not cross a kink.
	Setup func(w [][]float64, x []float64)
}

// Config returns the mixer Config of test case c for kind name.
func (c TestCase) Config(name string) Config {
	maxLen := c.MaxLen
	if maxLen == 0 {
		maxLen = c.T
	}
	return Config{D: c.D, Heads: c.Heads, MaxLen: maxLen, Causal: c.Causal, Layer: c.Layer, NLayers: c.Layer + 1,
		Opts: OptionsOf(name, c.Opts)}
}
