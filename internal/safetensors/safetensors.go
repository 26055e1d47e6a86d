package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// DType is a tensor element type, spelled as in the safetensors header.
type DType string

// The element types this package knows. F32, F64 and I32 have typed
// accessors; the others can be read and written as raw bytes.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// Size returns the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16, I16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// MaxHeader is the largest header Read accepts (100 MB, as the reference
// implementation).
const MaxHeader = 100 << 20

// Tensor is one named tensor: its dtype, shape and raw little-endian bytes.
type Tensor struct {
	DType DType
	Shape []int
	Data  []byte
}

// Numel is the number of elements, the product of Shape (1 for a scalar).
func (t Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a set of named tensors plus string metadata.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
}

// New returns an empty File.
func New() *File {
	return &File{Tensors: map[string]Tensor{}, Metadata: map[string]string{}}
}

// Names returns the tensor names in sorted order.
func (f *File) Names() []string { return sortedNames(f.Tensors) }

type entry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// ReadFile reads and validates the safetensors file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Read reads and validates a safetensors stream.
func Read(r io.Reader) (*File, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse validates and decodes a whole safetensors file held in b. The tensor
// data of the result aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: file too short (%d bytes) for the header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeader {
		return nil, fmt.Errorf("safetensors: header length %d exceeds %d", n, MaxHeader)
	}
	if uint64(len(b)-8) < n {
		return nil, fmt.Errorf("safetensors: header length %d beyond end of file (%d bytes)", n, len(b))
	}
	data := b[8+n:]
	meta, entries, err := parseHeader(b[8:8+n], int64(len(data)))
	if err != nil {
		return nil, err
	}
	f := &File{Tensors: map[string]Tensor{}, Metadata: meta}
	for name, e := range entries {
		lo, hi := e.DataOffsets[0], e.DataOffsets[1]
		f.Tensors[name] = Tensor{DType: e.DType, Shape: e.Shape, Data: data[lo:hi:hi]}
	}
	return f, nil
}

// parseHeader validates a header against a data section of dataLen bytes:
// known dtypes, shapes whose sizes match their offsets, tensors that tile
// the data section exactly (no overlap, gap or trailing byte), metadata
// mapping strings to strings. It reads no tensor data.
func parseHeader(hdr []byte, dataLen int64) (map[string]string, map[string]entry, error) {
	if len(bytes.TrimSpace(hdr)) == 0 || bytes.TrimSpace(hdr)[0] != '{' {
		return nil, nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	raw, err := decodeObject(hdr)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: header: %v", err)
	}
	meta, entries := map[string]string{}, map[string]entry{}
	type span struct {
		lo, hi int64
		name   string
	}
	var spans []span
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &meta); err != nil {
				return nil, nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e entry
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %v", name, err)
		}
		sz := e.DType.Size()
		if sz == 0 {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, e.DType)
		}
		if e.Shape == nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: missing shape", name)
		}
		numel := int64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, nil, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", name, e.Shape)
			}
			if d > 0 && numel > math.MaxInt64/int64(d) {
				return nil, nil, fmt.Errorf("safetensors: tensor %q: shape %v overflows", name, e.Shape)
			}
			numel *= int64(d)
		}
		lo, hi := e.DataOffsets[0], e.DataOffsets[1]
		if lo < 0 || hi < lo || hi > dataLen {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d,%d] outside data section of %d bytes", name, lo, hi, dataLen)
		}
		if numel > math.MaxInt64/int64(sz) || hi-lo != numel*int64(sz) {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %d bytes for %s shape %v (want %d)", name, hi-lo, e.DType, e.Shape, numel*int64(sz))
		}
		entries[name] = e
		spans = append(spans, span{lo, hi, name})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].lo != spans[j].lo {
			return spans[i].lo < spans[j].lo
		}
		return spans[i].hi < spans[j].hi
	})
	var at int64
	for _, s := range spans {
		if s.lo < at {
			return nil, nil, fmt.Errorf("safetensors: tensor %q overlaps the previous tensor", s.name)
		}
		if s.lo > at {
			return nil, nil, fmt.Errorf("safetensors: gap in data section before tensor %q (bytes %d to %d)", s.name, at, s.lo)
		}
		at = s.hi
	}
	if at != dataLen {
		return nil, nil, fmt.Errorf("safetensors: %d trailing bytes after the last tensor", dataLen-at)
	}
	return meta, entries, nil
}

// decodeObject decodes a JSON object into its raw members, rejecting
// duplicate keys (encoding/json would silently keep the last).
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("key %q: %v", key, err)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return out, nil
}

// Bytes encodes f. Tensors are ordered by name and laid out contiguously;
// the header is padded with spaces to a multiple of 8 bytes.
func (f *File) Bytes() ([]byte, error) {
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	if len(f.Metadata) > 0 {
		mb, err := json.Marshal(f.Metadata)
		if err != nil {
			return nil, err
		}
		hdr.WriteString(`"__metadata__":`)
		hdr.Write(mb)
		first = false
	}
	var off int64
	names := f.Names()
	for _, name := range names {
		t := f.Tensors[name]
		if name == "__metadata__" {
			return nil, fmt.Errorf("safetensors: tensor name %q is reserved", name)
		}
		if t.DType.Size() == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", name, t.Shape)
			}
		}
		if len(t.Data) != t.Numel()*t.DType.Size() {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes for %s shape %v", name, len(t.Data), t.DType, t.Shape)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		eb, err := json.Marshal(entry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + int64(len(t.Data))}})
		if err != nil {
			return nil, err
		}
		nb, _ := json.Marshal(name)
		if !first {
			hdr.WriteByte(',')
		}
		first = false
		hdr.Write(nb)
		hdr.WriteByte(':')
		hdr.Write(eb)
		off += int64(len(t.Data))
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	out := make([]byte, 8, 8+hdr.Len()+int(off))
	binary.LittleEndian.PutUint64(out, uint64(hdr.Len()))
	out = append(out, hdr.Bytes()...)
	for _, name := range names {
		out = append(out, f.Tensors[name].Data...)
	}
	return out, nil
}

// WriteFile encodes f and writes it to path atomically (a temporary file in
// the same directory, then rename).
func (f *File) WriteFile(path string) error {
	b, err := f.Bytes()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
