// Package mixertest is the conformance suite every registered token mixer
// runs: shapes, determinism, a forward independent of the thread budget
// (mixer.Pass.Threads), causality, key padding, inputs not mutated,
// backward called twice doubles the gradients, and a float64
// finite-difference check of the input and parameter gradients.
package mixertest
