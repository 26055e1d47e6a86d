package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"unsafe"
)

// Source is a set of named float tensors to load from: a File held in
// memory, or a Reader that streams them from disk.
type Source interface {
	// Names returns the tensor names in sorted order.
	Names() []string
	// Info returns a tensor's dtype and shape.
	Info(name string) (dtype DType, shape []int, ok bool)
	// ReadFloats32 and ReadFloats64 fill dst, which has the tensor's
	// element count, with tensor name converted from F32, F64, F16 or BF16.
	ReadFloats32(name string, dst []float32) error
	ReadFloats64(name string, dst []float64) error
}

// Info returns tensor name's dtype and shape.
func (f *File) Info(name string) (DType, []int, bool) {
	t, ok := f.Tensors[name]
	return t.DType, t.Shape, ok
}

// ReadFloats32 implements Source.
func (f *File) ReadFloats32(name string, dst []float32) error {
	t, err := f.get(name)
	if err != nil {
		return err
	}
	return decodeFloats(dst, name, t.DType, t.Numel(), t.Data)
}

// ReadFloats64 implements Source.
func (f *File) ReadFloats64(name string, dst []float64) error {
	t, err := f.get(name)
	if err != nil {
		return err
	}
	return decodeFloats(dst, name, t.DType, t.Numel(), t.Data)
}

// Reader reads a safetensors file from disk tensor by tensor, so that a
// tensor's values go straight into the caller's memory and the file is
// never held whole. OpenReader validates the whole header against the
// file's size before any tensor is read: a truncated or corrupt file fails
// there, having allocated at most its header.
type Reader struct {
	f        *os.File
	path     string
	data     int64 // file offset of the data section
	entries  map[string]entry
	Metadata map[string]string
}

// OpenReader opens and validates the safetensors file at path.
func OpenReader(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f, path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func newReader(f *os.File, path string) (*Reader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var lenb [8]byte
	if size < 8 {
		return nil, fmt.Errorf("safetensors: file too short (%d bytes) for the header length", size)
	}
	if _, err := io.ReadFull(f, lenb[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(lenb[:])
	if n > MaxHeader {
		return nil, fmt.Errorf("safetensors: header length %d exceeds %d", n, MaxHeader)
	}
	if uint64(size-8) < n {
		return nil, fmt.Errorf("safetensors: header length %d beyond end of file (%d bytes)", n, size)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, err
	}
	meta, entries, err := parseHeader(hdr, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	return &Reader{f: f, path: path, data: 8 + int64(n), entries: entries, Metadata: meta}, nil
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Names implements Source.
func (r *Reader) Names() []string { return sortedNames(r.entries) }

// sortedNames returns the keys of m in sorted order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info implements Source.
func (r *Reader) Info(name string) (DType, []int, bool) {
	e, ok := r.entries[name]
	return e.DType, slices.Clone(e.Shape), ok
}

// ReadFloats32 implements Source: an F32 tensor is read straight into dst,
// another dtype through a buffer of readChunk bytes.
func (r *Reader) ReadFloats32(name string, dst []float32) error { return readFloats(r, name, dst) }

// ReadFloats64 implements Source.
func (r *Reader) ReadFloats64(name string, dst []float64) error { return readFloats(r, name, dst) }

// readChunk is the buffer of a converting read.
const readChunk = 1 << 20

// littleEndian is true on the machines whose memory order is the format's.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func readFloats[F float32 | float64](r *Reader, name string, dst []F) error {
	e, ok := r.entries[name]
	if !ok {
		return fmt.Errorf("safetensors: no tensor %q", name)
	}
	lo, hi := e.DataOffsets[0], e.DataOffsets[1]
	sz := int64(e.DType.Size())
	numel := (hi - lo) / sz
	if int64(len(dst)) != numel {
		return fmt.Errorf("safetensors: tensor %q has %d elements, want %d", name, numel, len(dst))
	}
	var z F
	if littleEndian && sz == int64(unsafe.Sizeof(z)) && (e.DType == F32 || e.DType == F64) && numel > 0 {
		// The stored bytes are the values: read them in place.
		b := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), hi-lo)
		if _, err := r.f.ReadAt(b, r.data+lo); err != nil {
			return fmt.Errorf("safetensors: %s: tensor %q: %w", r.path, name, err)
		}
		return nil
	}
	buf := make([]byte, min(readChunk, hi-lo))
	for off := lo; off < hi; {
		n := min(int64(len(buf)), hi-off)
		b := buf[:n]
		if _, err := r.f.ReadAt(b, r.data+off); err != nil {
			return fmt.Errorf("safetensors: %s: tensor %q: %w", r.path, name, err)
		}
		i := (off - lo) / sz
		if err := decodeFloats(dst[i:i+n/sz], name, e.DType, int(n/sz), b); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// decodeFloats converts n little-endian values of dtype from b into dst.
func decodeFloats[F float32 | float64](dst []F, name string, dtype DType, n int, b []byte) error {
	if len(dst) != n {
		return fmt.Errorf("safetensors: tensor %q has %d elements, want %d", name, n, len(dst))
	}
	switch dtype {
	case F32:
		for i := range dst {
			dst[i] = F(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case F64:
		for i := range dst {
			dst[i] = F(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	case BF16:
		for i := range dst {
			dst[i] = F(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
	case F16:
		for i := range dst {
			dst[i] = F(half(binary.LittleEndian.Uint16(b[2*i:])))
		}
	default:
		return fmt.Errorf("safetensors: tensor %q has dtype %s, want a float type", name, dtype)
	}
	return nil
}
