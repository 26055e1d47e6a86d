package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// IRVersion and Opset are what every file declares: IR version 8 and the
// default domain's opset 17 (the first with DFT and LayerNormalization),
// which ONNX 1.12's checker and ONNX Runtime from 1.13 on accept.
const (
	IRVersion = 8
	Opset     = 17
)

// Graph builds one ONNX graph. Nodes are added in topological order (an
// op's inputs exist when it is added); every value has a unique name.
type Graph struct {
	nodes, inputs, outputs []buf
	inits                  []initializer
	used                   map[string]bool
	consts                 map[string]string
	n                      int
	f16                    bool // weights stored as float16, cast to float32 in the graph
}

// NewGraph returns an empty graph; with f16, F32Weight stores float16.
func NewGraph(f16 bool) *Graph {
	return &Graph{used: map[string]bool{}, consts: map[string]string{}, f16: f16}
}

// Attr is one node attribute.
type Attr struct {
	name   string
	typ    int
	i      int64
	f      float32
	s      string
	ints   []int64
	floats []float32
	t      buf
}

// AInt is an int attribute.
func AInt(name string, v int64) Attr { return Attr{name: name, typ: attrTypeInt, i: v} }

// AInts is an ints attribute.
func AInts(name string, v ...int64) Attr { return Attr{name: name, typ: attrTypeInts, ints: v} }

// AFloat is a float attribute.
func AFloat(name string, v float32) Attr { return Attr{name: name, typ: attrTypeFloat, f: v} }

// AFloatTensor is a tensor attribute holding one float32 (ConstantOfShape's
// value).
func AFloatTensor(name string, v float32) Attr {
	return Attr{name: name, typ: attrTypeTensor, t: initializer{name: name, dt: Float, dims: []int64{1}, raw: f32Raw([]float32{v})}.encode("", 0)}
}

// AString is a string attribute.
func AString(name, v string) Attr { return Attr{name: name, typ: attrTypeString, s: v} }

func (a Attr) encode() buf {
	var b buf
	b.str(attrName, a.name)
	b.int(attrType, int64(a.typ))
	switch a.typ {
	case attrTypeInt:
		b.int(attrI, a.i)
	case attrTypeFloat:
		b.float(attrF, a.f)
	case attrTypeString:
		b.str(attrS, a.s)
	case attrTypeInts:
		b.packedInts(attrInts, a.ints)
	case attrTypeTensor:
		b.bytes(attrT, a.t)
	}
	return b
}

// name returns a new unique value name starting with prefix.
func (g *Graph) name(prefix string) string {
	for {
		g.n++
		s := prefix + "_" + strconv.Itoa(g.n)
		if !g.used[s] {
			g.used[s] = true
			return s
		}
	}
}

// Op adds a node of op_type op with one output and returns that output.
func (g *Graph) Op(op string, in []string, attrs ...Attr) string {
	return g.OpN(op, in, 1, attrs...)[0]
}

// OpN adds a node with n outputs and returns them.
func (g *Graph) OpN(op string, in []string, n int, attrs ...Attr) []string {
	var b buf
	for _, s := range in {
		b.str(nodeInput, s)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = g.name(op)
		b.str(nodeOutput, out[i])
	}
	b.str(nodeName, out[0])
	b.str(nodeOpType, op)
	for _, a := range attrs {
		b.bytes(nodeAttribute, a.encode())
	}
	g.nodes = append(g.nodes, b)
	return out
}

// initializer is one constant tensor of the graph, little-endian.
type initializer struct {
	name string
	dt   int
	dims []int64
	raw  []byte
}

// encode encodes the TensorProto: its bytes inline, or, with location,
// a reference to them at offset in that external data file.
func (t initializer) encode(location string, offset int) buf {
	var b buf
	b.packedInts(tensorDims, t.dims)
	b.int(tensorDataType, int64(t.dt))
	b.str(tensorName, t.name)
	if location == "" {
		b.bytes(tensorRawData, t.raw)
		return b
	}
	for _, kv := range [][2]string{{"location", location}, {"offset", strconv.Itoa(offset)}, {"length", strconv.Itoa(len(t.raw))}} {
		var e buf
		e.str(entryKey, kv[0])
		e.str(entryValue, kv[1])
		b.bytes(tensorExternalData, e)
	}
	b.int(tensorDataLocation, dataLocationExternal)
	return b
}

// init adds an initializer under name and returns it. A name from g.name
// is already reserved; any other must be new.
func (g *Graph) init(name string, dt int, dims []int64, raw []byte) string {
	g.used[name] = true
	g.inits = append(g.inits, initializer{name, dt, dims, raw})
	return name
}

// reserve claims a caller's value name, which must be new.
func (g *Graph) reserve(name string) string {
	if g.used[name] {
		panic("onnx: duplicate value name " + name)
	}
	g.used[name] = true
	return name
}

func f32Raw(v []float32) []byte {
	raw := make([]byte, 0, 4*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	return raw
}

// F32 adds a float32 initializer.
func (g *Graph) F32(name string, dims []int64, v []float32) string {
	return g.init(g.reserve(name), Float, dims, f32Raw(v))
}

// Weight adds a model weight: float32, or float16 with a Cast to float32
// after it when the graph stores half weights. It returns the float32
// value's name.
func (g *Graph) Weight(name string, dims []int64, v []float32) string {
	if !g.f16 {
		return g.F32(name, dims, v)
	}
	h := make([]uint16, len(v))
	kernels.ToHalf(h, v)
	raw := make([]byte, 0, 2*len(v))
	for _, x := range h {
		raw = binary.LittleEndian.AppendUint16(raw, x)
	}
	return g.Op("Cast", []string{g.init(g.reserve(name), Float16, dims, raw)}, AInt("to", Float))
}

// i64 adds an int64 initializer under the reserved name.
func (g *Graph) i64(name string, dims []int64, v []int64) string {
	raw := make([]byte, 0, 8*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
	}
	return g.init(name, Int64, dims, raw)
}

// Const adds a float32 constant initializer under a new name.
func (g *Graph) Const(dims []int64, v []float32) string {
	return g.init(g.name("c"), Float, dims, f32Raw(v))
}

// Scalar is a float32 scalar constant (shared by every use).
func (g *Graph) Scalar(v float32) string {
	k := fmt.Sprintf("f%08x", math.Float32bits(v))
	if s, ok := g.consts[k]; ok {
		return s
	}
	s := g.init(g.name("c"), Float, nil, f32Raw([]float32{v}))
	g.consts[k] = s
	return s
}

// Ints is a 1-D int64 constant (shared by every use).
func (g *Graph) Ints(v ...int64) string {
	k := fmt.Sprint("i", v)
	if s, ok := g.consts[k]; ok {
		return s
	}
	s := g.i64(g.name("c"), []int64{int64(len(v))}, v)
	g.consts[k] = s
	return s
}

// IntScalar is an int64 scalar constant (shared by every use).
func (g *Graph) IntScalar(v int64) string {
	k := fmt.Sprint("s", v)
	if s, ok := g.consts[k]; ok {
		return s
	}
	s := g.i64(g.name("c"), nil, []int64{v})
	g.consts[k] = s
	return s
}

// valueInfo encodes a ValueInfoProto of a tensor whose dims are int
// (fixed) or string (named, dynamic).
func valueInfo(name string, dt int, dims ...any) buf {
	var shape buf
	for _, d := range dims {
		var db buf
		switch d := d.(type) {
		case int:
			db.int(dimValue, int64(d))
		case string:
			db.str(dimParam, d)
		}
		shape.bytes(shapeDim, db)
	}
	var tt buf
	tt.int(typeTensorElem, int64(dt))
	tt.bytes(typeTensorDims, shape)
	var ty buf
	ty.bytes(typeTensor, tt)
	var b buf
	b.str(valueName, name)
	b.bytes(valueType, ty)
	return b
}

// Input declares a graph input.
func (g *Graph) Input(name string, dt int, dims ...any) string {
	g.used[name] = true
	g.inputs = append(g.inputs, valueInfo(name, dt, dims...))
	return name
}

// Output declares value v as the graph output name (through an Identity
// when the names differ).
func (g *Graph) Output(v, name string, dt int, dims ...any) {
	if v != name {
		var b buf
		b.str(nodeInput, v)
		b.str(nodeOutput, name)
		b.str(nodeName, name)
		b.str(nodeOpType, "Identity")
		g.nodes = append(g.nodes, b)
		g.used[name] = true
	}
	g.outputs = append(g.outputs, valueInfo(name, dt, dims...))
}

// externalMin is the smallest tensor (in bytes) that goes to the external
// data file when there is one, as ONNX's own writer does (a variable for
// the tests).
var externalMin = 1024

// Model encodes the ModelProto of the graph: IR version 8, opset 17,
// producer tokenmix at version, and the metadata entries (sorted by key).
// With location, every initializer of externalMin bytes or more is stored
// in data instead, at 64-byte aligned offsets, as ONNX external data in the
// file location (relative to the model file); data is nil otherwise.
func (g *Graph) Model(name, version, doc string, meta map[string]string, location string) (model, data []byte) {
	var gb buf
	for _, n := range g.nodes {
		gb.bytes(graphNode, n)
	}
	gb.str(graphName, name)
	for _, t := range g.inits {
		if location == "" || len(t.raw) < externalMin {
			gb.bytes(graphInitializer, t.encode("", 0))
			continue
		}
		for len(data)%64 != 0 {
			data = append(data, 0)
		}
		gb.bytes(graphInitializer, t.encode(location, len(data)))
		data = append(data, t.raw...)
	}
	for _, v := range g.inputs {
		gb.bytes(graphInput, v)
	}
	for _, v := range g.outputs {
		gb.bytes(graphOutput, v)
	}
	var m buf
	m.int(modelIRVersion, IRVersion)
	m.str(modelProducer, "tokenmix")
	m.str(modelProducerVer, version)
	if doc != "" {
		m.str(modelDocString, doc)
	}
	m.bytes(modelGraph, gb)
	var op buf
	op.str(opsetDomain, "")
	op.int(opsetVersion, Opset)
	m.bytes(modelOpsetImport, op)
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var e buf
		e.str(entryKey, k)
		e.str(entryValue, meta[k])
		m.bytes(modelMetadata, e)
	}
	return m, data
}

// Size is the initializers' bytes so far.
func (g *Graph) Size() int {
	n := 0
	for _, t := range g.inits {
		n += len(t.raw)
	}
	return n
}
