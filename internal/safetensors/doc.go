// Package safetensors reads and writes the safetensors tensor file format
// used by Hugging Face and PyTorch: an 8-byte little-endian header length N,
// N bytes of JSON header, then the raw little-endian tensor bytes.
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets"},
// where data_offsets = [begin, end) are byte offsets into the data section,
// plus an optional "__metadata__" object of string values. Reading validates
// everything: header length and JSON, duplicate names, known dtypes,
// non-negative shapes, end−begin = numel·dtype size, offsets inside the file,
// and that the tensors cover the data section without gaps or overlaps.
//
// Writing orders tensors by name and lays them out contiguously, so the same
// tensors always produce the same bytes.
package safetensors
