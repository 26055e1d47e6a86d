package mixer

// Kind is one registered mixer: its name, capabilities and constructors.
// Constructors validate the Config (including every option) and return an
// error naming the offending key.
type Kind struct {
	Name string
	// Causal and Bidirectional say which masking modes the kind supports;
	// KeyPadding says it honours Pass.Pad (FNet does not: it mixes pads).
	Causal, Bidirectional, KeyPadding bool
	// Paper is the citation shown by `tokenmix mixers` and in the docs.
	Paper string
	New32 func(Config) (Mixer[float32], error)
	New64 func(Config) (Mixer[float64], error)
}
