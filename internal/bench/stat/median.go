package stat

import "slices"

// Median returns the middle value of xs (the upper one of the two middle
// values when len(xs) is even), without changing xs. Median panics if xs
// is empty.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
