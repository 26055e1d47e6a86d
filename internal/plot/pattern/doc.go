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
// one forward pass (WeightMap, HeatColour): exact zeros white, positive
// weights from a pale tint to dark along √w, each label with the panel's
// fraction of exact zeros. attn.Attention (full, strided, fixed) implements
// both, so its weights can be drawn too. The CLI front end is `tokenmix
// pattern`; with --weights it draws a trained model's weights on an input,
// each layer's mixer applied to that layer's input LN1(x) (model.Model's
// MixerInput hook).
package pattern
