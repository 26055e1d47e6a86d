// Package pattern draws attention connectivity as PNG pictures: for every
// layer and head, the T×T matrix of allowed query–key pairs (query rows, key
// columns, allowed cells dark), laid out as a labelled grid of panels like
// Figure 3 of Child et al. 2019, "Generating Long Sequences with Sparse
// Transformers"; and, optionally, the 2-D view of one query on a W×W image
// grid.
//
// Maps reads the matrices from any registered mixer that implements
// Connectivity (full, strided, fixed: the pictures come from the kernels'
// own block layouts). Mixers whose attention depends on the input (top-k,
// entmax, LSH) can implement Weights instead and are drawn as heat maps of
// one forward pass. The CLI front end is `tokenmix pattern`.
package pattern
