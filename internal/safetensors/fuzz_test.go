package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"testing"
)

// heapAllocs is the cumulative number of bytes allocated on the heap.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rawFile is a safetensors file of header hdr followed by data.
func rawFile(hdr string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	return append(append(b, hdr...), data...)
}

// FuzzParse checks that Parse never panics nor allocates far beyond its
// input, and that a file it accepts survives Bytes and Parse unchanged.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 45s ./internal/safetensors
func FuzzParse(f *testing.F) {
	for _, p := range []string{
		"../../testdata/spam/weights.safetensors",
		"../model/testdata/parity/lm_causal/batch.safetensors",
	} {
		if b, err := os.ReadFile(filepath.FromSlash(p)); err == nil {
			f.Add(b)
		}
	}
	nf := New()
	nf.Metadata["format"] = "pt"
	nf.SetF32("b", []int{2, 3}, []float32{1, -2, 3.5, 0, 1e-30, 7})
	nf.SetF64("a", []int{2}, []float64{3.14, -1e300})
	nf.SetI32("tokens", []int{1, 3}, []int32{-1, 0, 5})
	nf.SetBF16("h", []int{2}, []float32{1, -2})
	nf.SetF32("scalar", nil, []float32{7})
	nf.SetF32("empty", []int{0, 4}, nil)
	good, err := nf.Bytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:8])
	f.Add([]byte{})
	f.Add(rawFile(`{}`, nil))
	f.Add(rawFile(`{"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(rawFile(`{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil))
	f.Add(rawFile(`{"x":{"dtype":"F64","shape":[0,9223372036854775807],"data_offsets":[0,0]}}`, nil))
	f.Add(rawFile(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,9223372036854775807]}}`, make([]byte, 4)))
	f.Add(rawFile(`{"x":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"I8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)))
	f.Add(rawFile(`{"__metadata__":{"a":1}}`, nil))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<62))

	f.Fuzz(func(t *testing.T, b []byte) {
		// 4 MiB of slack covers the runtime's own allocations; a size taken
		// on trust from a header would be GiBs.
		before := heapAllocs()
		pf, err := Parse(b)
		if used, limit := heapAllocs()-before, uint64(4<<20+64*len(b)); used > limit {
			t.Fatalf("Parse of %d bytes allocated %d bytes (limit %d)", len(b), used, limit)
		}
		if err != nil {
			if pf != nil {
				t.Fatalf("Parse returned a File with error %v", err)
			}
			return
		}
		for _, name := range pf.Names() {
			// The typed accessors on every tensor, whatever its dtype.
			pf.F32(name)
			pf.F64(name)
			pf.I32(name)
		}
		out, err := pf.Bytes()
		if err != nil {
			t.Fatalf("Bytes of a parsed file: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of Bytes: %v", err)
		}
		if !slices.Equal(pf.Names(), back.Names()) {
			t.Fatalf("names %q, after a round trip %q", pf.Names(), back.Names())
		}
		for _, name := range pf.Names() {
			a, z := pf.Tensors[name], back.Tensors[name]
			if a.DType != z.DType || !slices.Equal(a.Shape, z.Shape) || !bytes.Equal(a.Data, z.Data) {
				t.Fatalf("tensor %q: %s %v %d bytes, after a round trip %s %v %d bytes",
					name, a.DType, a.Shape, len(a.Data), z.DType, z.Shape, len(z.Data))
			}
		}
		if len(pf.Metadata) != len(back.Metadata) {
			t.Fatalf("metadata %v, after a round trip %v", pf.Metadata, back.Metadata)
		}
		for k, v := range pf.Metadata {
			if back.Metadata[k] != v {
				t.Fatalf("metadata %q = %q, after a round trip %q", k, v, back.Metadata[k])
			}
		}
	})
}
