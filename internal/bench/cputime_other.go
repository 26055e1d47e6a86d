//go:build !linux

package bench

// threadCPU reports that per-thread CPU time is not available here.
func threadCPU() (float64, bool) { return 0, false }
