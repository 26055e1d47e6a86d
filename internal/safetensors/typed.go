package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// SetF32 stores data as an F32 tensor named name with the given shape.
// SetF32 panics if len(data) is not the product of shape.
func (f *File) SetF32(name string, shape []int, data []float32) {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	f.set(name, F32, shape, b)
}

// SetF64 stores data as an F64 tensor. Panics as SetF32.
func (f *File) SetF64(name string, shape []int, data []float64) {
	b := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	f.set(name, F64, shape, b)
}

// SetBF16 stores data as a BF16 tensor, each value rounded to the nearest
// bfloat16 (ties to even; NaN stays NaN). Panics as SetF32.
func (f *File) SetBF16(name string, shape []int, data []float32) {
	b := make([]byte, 2*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint16(b[2*i:], bf16(v))
	}
	f.set(name, BF16, shape, b)
}

// bf16 rounds v to the nearest bfloat16, ties to even: the top 16 bits of
// v's float32 encoding after adding half an ulp of the result.
func bf16(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		return uint16(u>>16) | 0x40 // a quiet NaN, whatever the payload
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// SetI32 stores data as an I32 tensor. Panics as SetF32.
func (f *File) SetI32(name string, shape []int, data []int32) {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	f.set(name, I32, shape, b)
}

func (f *File) set(name string, dt DType, shape []int, b []byte) {
	t := Tensor{DType: dt, Shape: slices.Clone(shape), Data: b}
	if t.Numel()*dt.Size() != len(b) {
		panic(fmt.Sprintf("safetensors: %s: %d elements for shape %v", name, len(b)/dt.Size(), shape))
	}
	if t.Shape == nil {
		t.Shape = []int{}
	}
	f.Tensors[name] = t
}

func (f *File) get(name string) (Tensor, error) {
	t, ok := f.Tensors[name]
	if !ok {
		return t, fmt.Errorf("safetensors: no tensor %q", name)
	}
	return t, nil
}

// F32 returns tensor name as float32 values and its shape. F16, BF16 and F64
// tensors are converted; other dtypes are an error.
func (f *File) F32(name string) ([]float32, []int, error) {
	t, err := f.get(name)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float32, t.Numel())
	if err := decodeFloats(out, name, t.DType, len(out), t.Data); err != nil {
		return nil, nil, err
	}
	return out, t.Shape, nil
}

// F64 returns tensor name as float64 values and its shape. F32, F16 and
// BF16 tensors are converted; other dtypes are an error.
func (f *File) F64(name string) ([]float64, []int, error) {
	t, err := f.get(name)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float64, t.Numel())
	if err := decodeFloats(out, name, t.DType, len(out), t.Data); err != nil {
		return nil, nil, err
	}
	return out, t.Shape, nil
}

// I32 returns tensor name as int32 values and its shape. I64 tensors are
// converted when every value fits; other dtypes are an error.
func (f *File) I32(name string) ([]int32, []int, error) {
	t, err := f.get(name)
	if err != nil {
		return nil, nil, err
	}
	out := make([]int32, t.Numel())
	switch t.DType {
	case I32:
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case I64:
		for i := range out {
			v := int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, nil, fmt.Errorf("safetensors: tensor %q: value %d does not fit in int32", name, v)
			}
			out[i] = int32(v)
		}
	default:
		return nil, nil, fmt.Errorf("safetensors: tensor %q has dtype %s, want I32", name, t.DType)
	}
	return out, t.Shape, nil
}

// half converts an IEEE 754 binary16 value to float32.
func half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(mant) / 1024 / 16384 // 2^-14 · mant/1024
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | mant<<13)
}
