// Package stat holds the two measurement primitives every timing in
// tokenmix shares: Median, the figure each protocol reports, and
// ProcessCPU, the process's CPU time. It imports nothing of tokenmix, so
// the packages that bench itself imports (the kernels, the mixers, train)
// can use it in their own timings and tests.
package stat
