package tokenmix

// Test helpers for the external test package (tokenmix_test), whose
// benchmarks import internal/bench, which imports this package.
var (
	TinyRun    = tinyRun
	RandomSeqs = randomSeqs
)
