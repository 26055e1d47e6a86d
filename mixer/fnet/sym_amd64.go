package fnet

const haveSymAsm = true

// foldAVX512 runs nc chunks of foldRow: e[i] = a[i] + b'[i], o[i] = a[i] − b'[i]
// for i < 16·nc, where b' reads backwards from b[15] (chunk j's partners are
// b[−16j … 15−16j] reversed).
//
//go:noescape
func foldAVX512(e, o, a, b *float32, nc int)

// putAVX512 stores (acc: adds) the 16 floats v at row and, reversed, at mir
// under the lane mask (bit i: mir[i] gets v[15−i]).
//
//go:noescape
func putAVX512(row, mir, v *float32, mask uint64, acc bool)
