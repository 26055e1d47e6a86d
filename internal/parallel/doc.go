// Package parallel is tokenmix's fork/join helper: it splits a range of work
// into chunks across up to a caller-given number of goroutines (its thread
// budget), with exactly one barrier per call. Calls from different
// goroutines run at once on a shared pool of workers, and the split never
// depends on how many do.
//
// Callers without a budget of their own pass Threads, the default: it is
// GOMAXPROCS, can be set with the TOKENMIX_THREADS environment variable,
// and is changed at run time with SetThreads (the CLI's --threads flag).
package parallel
