package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// IDX is a decoded IDX file (LeCun's MNIST format) of unsigned bytes.
type IDX struct {
	// Dims are the dimensions, outermost first (e.g. [N,28,28]).
	Dims []int
	// Data is the row-major payload, len = product of Dims.
	Data []byte
}

// IDX magic numbers of unsigned-byte files: 0x00 0x00, type 0x08, then the
// number of dimensions.
const (
	IDXMagicImages = 0x00000803 // [N,rows,cols]
	IDXMagicLabels = 0x00000801 // [N]
)

// maxIDXBytes bounds the payload a header may announce, so a corrupt header
// cannot make ReadIDX allocate without bound.
const maxIDXBytes = 1 << 31

// ReadIDX decodes an unsigned-byte IDX stream, gzip-compressed or not
// (detected from the gzip magic). It checks the magic number, that the
// element type is unsigned byte (0x08), that every dimension is positive,
// and that the payload is exactly the announced size, with no trailing
// bytes.
func ReadIDX(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("idx: gzip: %v", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, fmt.Errorf("idx: short header: %v", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("idx: bad magic %#08x (want 0x000008nn)", binary.BigEndian.Uint32(magic[:]))
	}
	if magic[2] != 0x08 {
		return nil, fmt.Errorf("idx: element type %#02x not supported (want 0x08, unsigned byte)", magic[2])
	}
	nd := int(magic[3])
	if nd == 0 {
		return nil, fmt.Errorf("idx: zero dimensions")
	}
	dimBytes := make([]byte, 4*nd)
	if _, err := io.ReadFull(br, dimBytes); err != nil {
		return nil, fmt.Errorf("idx: short dimensions: %v", err)
	}
	x := &IDX{Dims: make([]int, nd)}
	size := 1
	for i := range nd {
		d := int(binary.BigEndian.Uint32(dimBytes[4*i:]))
		if d == 0 {
			return nil, fmt.Errorf("idx: dimension %d is 0", i)
		}
		x.Dims[i] = d
		if d > maxIDXBytes/size {
			return nil, fmt.Errorf("idx: payload larger than %d bytes", maxIDXBytes)
		}
		size *= d
	}
	// Read without trusting the header for the allocation: a truncated file
	// that announces a huge payload fails after reading what it has.
	data, err := io.ReadAll(io.LimitReader(br, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("idx: %v", err)
	}
	if len(data) != size {
		return nil, fmt.Errorf("idx: payload has %d bytes, header announces %d", len(data), size)
	}
	x.Data = data
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return nil, fmt.Errorf("idx: %d trailing bytes after the %d-byte payload", n, size)
	}
	return x, nil
}

// ReadIDXFile reads an IDX file and checks its magic number is want
// (IDXMagicImages or IDXMagicLabels).
func ReadIDXFile(path string, want uint32) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x, err := ReadIDX(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if got := uint32(0x0800 | len(x.Dims)); got != want {
		return nil, fmt.Errorf("%s: idx: magic %#08x, want %#08x", path, got, want)
	}
	return x, nil
}

// WriteIDX encodes x as an unsigned-byte IDX stream (uncompressed). It
// panics if len(x.Data) is not the product of x.Dims or there are more than
// 255 dimensions.
func WriteIDX(w io.Writer, x *IDX) error {
	size := 1
	for _, d := range x.Dims {
		size *= d
	}
	if size != len(x.Data) || len(x.Dims) > 255 {
		panic("data: WriteIDX with inconsistent dims and data")
	}
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0x08, byte(len(x.Dims))})
	for _, d := range x.Dims {
		binary.Write(&buf, binary.BigEndian, uint32(d))
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	_, err := w.Write(x.Data)
	return err
}
