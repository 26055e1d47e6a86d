// Package parallel is tokenmix's fork/join helper: it splits a range of work
// across a settable number of goroutines with exactly one barrier per call.
//
// The thread count defaults to GOMAXPROCS, can be set with the
// TOKENMIX_THREADS environment variable, and is changed at run time with
// SetThreads (the CLI's --threads flag).
package parallel
