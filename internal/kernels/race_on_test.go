//go:build race

package kernels

// raceEnabled: the race detector is on, and sync.Pool drops some of what
// it is given, so steady-state calls may allocate.
const raceEnabled = true
