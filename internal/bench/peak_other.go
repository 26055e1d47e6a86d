//go:build !amd64

package bench

// peakLoop reports that there is no assembly FMA loop on this platform.
func peakLoop() (isa string, flopsPerIter float64, loop func(int)) {
	return "", 0, nil
}
