package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
)

// StepProfile is where a training step's time goes: by phase, the wall
// time of Trainer.Step's phases (model.StepTiming), and by kernel, the
// function each sample of a CPU profile of the same steps was in
// (runtime/pprof, every thread), as shares of all samples.
type StepProfile struct {
	Phases  []Share `json:"phases"` // Share is of the step's time, Ms per step
	Samples int     `json:"samples"`
	Kernels []Share `json:"kernels"`
}

// Share is one name's share of the step (a phase, with its ms per step)
// or of the samples (a kernel).
type Share struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"`
	Ms    float64 `json:"ms,omitempty"`
}

// profileSample is one sample of a CPU profile: its stack, innermost
// function first, and its count.
type profileSample struct {
	stack []string
	n     int64
}

// kernelShares aggregates the samples of a CPU profile (the gzipped
// protocol buffer runtime/pprof writes) by their innermost function: the
// top ones, largest first, and the samples counted.
func kernelShares(pprof []byte, top int) ([]Share, int, error) {
	samples, err := parsePprof(pprof)
	if err != nil {
		return nil, 0, err
	}
	byFn := map[string]int64{}
	var total int64
	for _, s := range samples {
		if len(s.stack) == 0 {
			continue
		}
		byFn[shortName(s.stack[0])] += s.n
		total += s.n
	}
	if total == 0 {
		return nil, 0, nil
	}
	var out []Share
	for k, v := range byFn {
		out = append(out, Share{Name: k, Share: float64(v) / float64(total)})
	}
	slices.SortFunc(out, func(a, b Share) int {
		if a.Share != b.Share {
			if a.Share > b.Share {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out, int(total), nil
}

// shortName drops a function name's module path and type parameters:
// "github.com/x/y/internal/kernels.Gemm[go.shape.float32]" is
// "kernels.Gemm".
func shortName(f string) string {
	if i := strings.LastIndex(f, "/"); i >= 0 {
		f = f[i+1:]
	}
	for {
		i := strings.Index(f, "[")
		if i < 0 {
			return f
		}
		j := strings.Index(f[i:], "]")
		if j < 0 {
			return f
		}
		f = f[:i] + f[i+j+1:]
	}
}

// parsePprof decodes the samples of a gzipped pprof profile: the fields
// of profile.proto it needs (sample: location ids and values; location:
// id and lines; function: id and name; the string table). A sample's
// count is its first value. Inlined calls are frames of their own.
func parsePprof(gz []byte) ([]profileSample, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %v", err)
	}
	type sample struct {
		locs []uint64
		n    int64
	}
	var samples []sample
	locs := map[uint64][]uint64{} // location id → function ids, innermost first
	funcs := map[uint64]int64{}   // function id → name's string index
	var strs []string
	err = protoFields(raw, func(field int, v uint64, b []byte) error {
		switch field {
		case 2: // sample
			var s sample
			first := true
			err := protoFields(b, func(f int, v uint64, b []byte) error {
				switch f {
				case 1:
					s.locs = appendVarints(s.locs, v, b)
				case 2:
					if first {
						vals := appendVarints(nil, v, b)
						if len(vals) > 0 {
							s.n, first = int64(vals[0]), false
						}
					}
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 4: // location
			var id uint64
			var fns []uint64
			err := protoFields(b, func(f int, v uint64, b []byte) error {
				switch f {
				case 1:
					id = v
				case 4: // line
					return protoFields(b, func(f int, v uint64, _ []byte) error {
						if f == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locs[id] = fns
			return err
		case 5: // function
			var id uint64
			var name int64
			err := protoFields(b, func(f int, v uint64, _ []byte) error {
				switch f {
				case 1:
					id = v
				case 2:
					name = int64(v)
				}
				return nil
			})
			funcs[id] = name
			return err
		case 6: // string_table
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]profileSample, 0, len(samples))
	for _, s := range samples {
		var stack []string
		for _, l := range s.locs {
			for _, f := range locs[l] {
				if i := funcs[f]; i >= 0 && int(i) < len(strs) {
					stack = append(stack, strs[i])
				}
			}
		}
		out = append(out, profileSample{stack, s.n})
	}
	return out, nil
}

// appendVarints appends a repeated varint field's values: one (v) when
// unpacked, every varint of b when packed.
func appendVarints(dst []uint64, v uint64, b []byte) []uint64 {
	if b == nil {
		return append(dst, v)
	}
	for len(b) > 0 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return dst
		}
		dst, b = append(dst, x), b[n:]
	}
	return dst
}

// protoFields calls fn for each field of the protocol buffer message b:
// its number, and its value (varint) or its bytes (length-delimited; nil
// for a varint). Fixed-width fields are skipped.
func protoFields(b []byte, fn func(field int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("bench: CPU profile: bad field key")
		}
		b = b[n:]
		field, wire := int(key>>3), key&7
		switch wire {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("bench: CPU profile: bad varint")
			}
			b = b[n:]
			if err := fn(field, v, nil); err != nil {
				return err
			}
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return fmt.Errorf("bench: CPU profile: bad length")
			}
			data := b[n : n+int(l)]
			b = b[n+int(l):]
			if err := fn(field, 0, data); err != nil {
				return err
			}
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("bench: CPU profile: short fixed64")
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("bench: CPU profile: short fixed32")
			}
			b = b[4:]
		default:
			return fmt.Errorf("bench: CPU profile: wire type %d", wire)
		}
	}
	return nil
}
