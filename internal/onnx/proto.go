package onnx

import (
	"encoding/binary"
	"math"
)

// buf is a protobuf message being encoded: fields are appended in the
// order they are written (any order is valid protobuf).
type buf []byte

func (b *buf) varint(v uint64) { *b = binary.AppendUvarint(*b, v) }

// key writes a field's tag: its number and wire type (0 varint, 2 bytes,
// 5 fixed32).
func (b *buf) key(field, wire int) { b.varint(uint64(field)<<3 | uint64(wire)) }

// int writes an int32, int64 or enum field (negative values as ten-byte
// varints, as protobuf does).
func (b *buf) int(field int, v int64) {
	b.key(field, 0)
	b.varint(uint64(v))
}

// bytes writes a string, bytes or embedded message field.
func (b *buf) bytes(field int, v []byte) {
	b.key(field, 2)
	b.varint(uint64(len(v)))
	*b = append(*b, v...)
}

func (b *buf) str(field int, s string) { b.bytes(field, []byte(s)) }

// float writes a float field (fixed32).
func (b *buf) float(field int, v float32) {
	b.key(field, 5)
	*b = binary.LittleEndian.AppendUint32(*b, math.Float32bits(v))
}

// packedInts writes a repeated int64 field, packed.
func (b *buf) packedInts(field int, vs []int64) {
	var p buf
	for _, v := range vs {
		p.varint(uint64(v))
	}
	b.bytes(field, p)
}

// The field numbers of onnx.proto (onnx/onnx.proto in the ONNX
// repository) for the messages this package writes.
const (
	modelIRVersion   = 1
	modelProducer    = 2
	modelProducerVer = 3
	modelDocString   = 6
	modelGraph       = 7
	modelOpsetImport = 8
	modelMetadata    = 14

	opsetDomain  = 1
	opsetVersion = 2

	entryKey   = 1
	entryValue = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrS      = 4
	attrT      = 5
	attrFloats = 7
	attrInts   = 8
	attrType   = 20

	tensorDims         = 1
	tensorDataType     = 2
	tensorName         = 8
	tensorRawData      = 9
	tensorExternalData = 13
	tensorDataLocation = 14

	valueName = 1
	valueType = 2

	typeTensor     = 1
	typeTensorElem = 1
	typeTensorDims = 2
	shapeDim       = 1
	dimValue       = 1
	dimParam       = 2
)

// AttributeProto.AttributeType values.
const (
	attrTypeFloat  = 1
	attrTypeInt    = 2
	attrTypeString = 3
	attrTypeTensor = 4
	attrTypeFloats = 6
	attrTypeInts   = 7
)

// TensorProto.DataLocation's EXTERNAL.
const dataLocationExternal = 1

// TensorProto.DataType values.
const (
	Float   = 1
	Int64   = 7
	Bool    = 9
	Float16 = 10
)
