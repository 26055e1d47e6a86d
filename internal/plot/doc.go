// Package plot draws the arena's figures as PNG files with gonum's plot
// library: line charts (loss curves, one line per mixer), labelled scatter
// plots (test metric against throughput) and log–log scaling curves (time
// and memory against sequence length).
//
// Every function takes plain float64 series, so callers need not import
// gonum; non-finite points (NaN, ±Inf, or ≤ 0 on a log axis) are dropped
// rather than breaking the figure.
package plot
