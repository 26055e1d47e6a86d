package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	f := New()
	f.Metadata["format"] = "pt"
	f.SetF32("b", []int{2, 3}, []float32{1, -2, 3.5, float32(math.Inf(1)), 0, 1e-30})
	f.SetF64("a", []int{2}, []float64{math.Pi, -1e300})
	f.SetI32("tokens", []int{1, 3}, []int32{-1, 0, math.MaxInt32})
	f.SetF32("scalar", nil, []float32{7})
	f.SetF32("empty", []int{0, 4}, nil)
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Names(); !slices.Equal(got, []string{"a", "b", "empty", "scalar", "tokens"}) {
		t.Fatalf("names %v", got)
	}
	if g.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", g.Metadata)
	}
	b, shape, err := g.F32("b")
	if err != nil || !slices.Equal(shape, []int{2, 3}) || !slices.Equal(b, []float32{1, -2, 3.5, float32(math.Inf(1)), 0, 1e-30}) {
		t.Errorf("b = %v %v %v", b, shape, err)
	}
	a, _, err := g.F64("a")
	if err != nil || !slices.Equal(a, []float64{math.Pi, -1e300}) {
		t.Errorf("a = %v %v", a, err)
	}
	tok, _, err := g.I32("tokens")
	if err != nil || !slices.Equal(tok, []int32{-1, 0, math.MaxInt32}) {
		t.Errorf("tokens = %v %v", tok, err)
	}
	s, shape, err := g.F32("scalar")
	if err != nil || len(shape) != 0 || s[0] != 7 {
		t.Errorf("scalar = %v %v %v", s, shape, err)
	}
	if _, _, err := g.I32("a"); err == nil {
		t.Error("I32 of an F64 tensor: want error")
	}
	if _, _, err := g.F32("nope"); err == nil {
		t.Error("missing tensor: want error")
	}
	// Deterministic bytes, and the header is 8-byte aligned.
	b1, _ := f.Bytes()
	b2, _ := g.Bytes()
	if !bytes.Equal(b1, b2) {
		t.Error("re-encoding a read file changed its bytes")
	}
	if binary.LittleEndian.Uint64(b1)%8 != 0 {
		t.Error("header length not a multiple of 8")
	}
}

func TestHalfConversions(t *testing.T) {
	f := New()
	// 0x3c00 = 1, 0xc000 = −2, 0x0001 = 2^-24, 0x7c00 = +Inf (binary16).
	h := []uint16{0x3c00, 0xc000, 0x0001, 0x7c00}
	b := make([]byte, 8)
	for i, v := range h {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	f.Tensors["h"] = Tensor{DType: F16, Shape: []int{4}, Data: b}
	// BF16 0x3fc0 = 1.5.
	f.Tensors["bf"] = Tensor{DType: BF16, Shape: []int{1}, Data: []byte{0xc0, 0x3f}}
	got, _, err := f.F32("h")
	want := []float32{1, -2, float32(math.Ldexp(1, -24)), float32(math.Inf(1))}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("F16: got %v want %v (%v)", got, want, err)
	}
	bf, _, err := f.F32("bf")
	if err != nil || bf[0] != 1.5 {
		t.Errorf("BF16: got %v (%v)", bf, err)
	}
}

// TestSetBF16 checks the rounding of float32 to bfloat16: exact values stay,
// halfway cases go to the even neighbour, larger or smaller ones to the
// nearer, NaN stays NaN.
func TestSetBF16(t *testing.T) {
	one := math.Float32frombits(0x3f800000)
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1.5, 0x3fc0},
		{-2, 0xc000},
		{float32(math.Inf(-1)), 0xff80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // halfway, 0x3f80 is even
		{math.Float32frombits(0x3f818000), 0x3f82}, // halfway, 0x3f82 is even
		{math.Float32frombits(0x3f808001), 0x3f81}, // above halfway
		{math.Float32frombits(0x3f807fff), 0x3f80}, // below halfway
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max float32 rounds to +Inf
		{one, 0x3f80},
	} {
		f := New()
		f.SetBF16("x", []int{1}, []float32{c.in})
		if got := binary.LittleEndian.Uint16(f.Tensors["x"].Data); got != c.want {
			t.Errorf("bf16(%#08x) = %#04x, want %#04x", math.Float32bits(c.in), got, c.want)
		}
	}
	f := New()
	f.SetBF16("nan", []int{1}, []float32{float32(math.NaN())})
	if v, _, _ := f.F32("nan"); !math.IsNaN(float64(v[0])) {
		t.Errorf("NaN became %v", v[0])
	}
}

// file builds a raw safetensors file from a header string and data bytes.
func file(hdr string, data []byte) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	return append(append(b, hdr...), data...)
}

func TestMalformed(t *testing.T) {
	data8 := make([]byte, 8)
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "too short"},
		{"header beyond end", file(`{}`, nil)[:9], "beyond end"},
		{"huge header", func() []byte { b := make([]byte, 16); binary.LittleEndian.PutUint64(b, 1<<40); return b }(), "exceeds"},
		{"not object", file(`[1,2]`, nil), "not a JSON object"},
		{"bad json", file(`{"a":`, nil), "header"},
		{"trailing json", file(`{} {}`, nil), "trailing"},
		{"duplicate", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "duplicate"},
		{"unknown dtype", file(`{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}`, data8[:1]), "unknown dtype"},
		{"unknown field", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, data8[:4]), "unknown field"},
		{"missing shape", file(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, data8[:4]), "missing shape"},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, data8[:4]), "negative"},
		{"size mismatch", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, data8), "want 12"},
		{"offset past end", file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data8), "outside"},
		{"reversed offsets", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, data8), "outside"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "overlaps"},
		{"gap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "gap"},
		{"trailing bytes", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, data8), "trailing bytes"},
		{"bad metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse: err = %v, want containing %q", err, c.want)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	f := New()
	f.Tensors["a"] = Tensor{DType: F32, Shape: []int{2}, Data: make([]byte, 4)}
	if _, err := f.Bytes(); err == nil {
		t.Error("want error for a size mismatch")
	}
	f = New()
	f.Tensors["a"] = Tensor{DType: "X", Shape: []int{1}, Data: make([]byte, 4)}
	if _, err := f.Bytes(); err == nil {
		t.Error("want error for an unknown dtype")
	}
}

func TestI64Narrowing(t *testing.T) {
	f := New()
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(5))
	binary.LittleEndian.PutUint64(b[8:], uint64(1)<<40)
	f.Tensors["t"] = Tensor{DType: I64, Shape: []int{2}, Data: b}
	if _, _, err := f.I32("t"); err == nil {
		t.Error("want error for an out-of-range I64 value")
	}
	f.Tensors["t"] = Tensor{DType: I64, Shape: []int{1}, Data: b[:8]}
	if v, _, err := f.I32("t"); err != nil || v[0] != 5 {
		t.Errorf("got %v %v", v, err)
	}
}
