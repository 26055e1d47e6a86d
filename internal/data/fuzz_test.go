package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
)

// heapAllocs is the cumulative number of bytes allocated on the heap.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// idxHeader is an IDX header of unsigned bytes with dims.
func idxHeader(dims ...uint32) []byte {
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return b
}

// FuzzReadIDX checks that ReadIDX never panics, allocates in proportion to
// its (decompressed) input whatever the header announces, and that what it
// accepts writes back to the same bytes.
//
//	go test -run '^$' -fuzz '^FuzzReadIDX$' -fuzztime 45s ./internal/data
func FuzzReadIDX(f *testing.F) {
	img := append(idxHeader(3, 2, 4), make([]byte, 24)...)
	for i := range 24 {
		img[16+i] = byte(i * 11)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(img)
	zw.Close()
	for _, b := range [][]byte{
		img,
		gz.Bytes(),
		append(idxHeader(5), 1, 2, 3, 4, 5),
		img[:len(img)-1],
		append(img, 0),
		idxHeader(0xffffffff, 0xffffffff, 0xffffffff),
		idxHeader(1<<31 - 1),
		append(idxHeader(1<<30), 1, 2, 3),
		idxHeader(0),
		{0, 0, 0x08, 0},
		{0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0},
		{0x1f, 0x8b},
		{},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		size := len(b)
		if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				n, _ := io.Copy(io.Discard, io.LimitReader(zr, 1<<26))
				size = max(size, int(n))
			}
		}
		// 4 MiB of slack covers the gzip reader and the runtime's own
		// allocations; a size taken on trust from a header would be GiBs.
		before := heapAllocs()
		x, err := ReadIDX(bytes.NewReader(b))
		if used, limit := heapAllocs()-before, uint64(4<<20+16*size); used > limit {
			t.Fatalf("ReadIDX of %d bytes (%d decompressed) allocated %d bytes (limit %d)", len(b), size, used, limit)
		}
		if err != nil {
			return
		}
		n := 1
		for _, d := range x.Dims {
			if d < 1 {
				t.Fatalf("dims %v", x.Dims)
			}
			n *= d
		}
		if n != len(x.Data) {
			t.Fatalf("dims %v for %d bytes", x.Dims, len(x.Data))
		}
		var out bytes.Buffer
		if err := WriteIDX(&out, x); err != nil {
			t.Fatal(err)
		}
		y, err := ReadIDX(&out)
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if !slices.Equal(x.Dims, y.Dims) || !bytes.Equal(x.Data, y.Data) {
			t.Fatalf("round trip: dims %v, %d bytes; back %v, %d bytes", x.Dims, len(x.Data), y.Dims, len(y.Data))
		}
	})
}

// FuzzListOps checks that ListOpsParse, ListOpsEval and ListOpsString never
// panic, and that ListOpsString inverts ListOpsParse.
//
//	go test -run '^$' -fuzz '^FuzzListOps$' -fuzztime 45s ./internal/data
func FuzzListOps(f *testing.F) {
	for _, s := range []string{
		"[MAX 2 9 [MIN 4 7 ] [MED 1 8 ] [SM 5 6 ] ]",
		"[MED 3 1 4 1 5 9 2 6 ]",
		"[SM [MAX 9 9 ] [MIN 0 ] 7 ]",
		"5",
		"",
		"[MAX ]",
		"[MIN 1 ] ]",
		"[SM 1 [MAX 2",
		"1 2",
		"<pad>",
		"[FIRST 1 ]",
		"\t[MAX\n1\v2 ]\u00a0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Arbitrary token ids, valid or not, from the raw bytes.
		raw := make([]int32, len(s))
		for i := range len(s) {
			raw[i] = int32(int8(s[i])) % (ListOpsVocab + 2)
		}
		ListOpsEval(raw)
		ListOpsString(raw)

		toks, err := ListOpsParse(s)
		if err != nil {
			return
		}
		ListOpsEval(toks)
		back, err := ListOpsParse(ListOpsString(toks))
		if err != nil {
			t.Fatalf("parsing %q back: %v", ListOpsString(toks), err)
		}
		if !slices.Equal(toks, back) {
			t.Fatalf("round trip: %v, back %v", toks, back)
		}
		if want := strings.Join(strings.Fields(s), " "); ListOpsString(toks) != want {
			t.Fatalf("ListOpsString %q, want %q", ListOpsString(toks), want)
		}
	})
}

// FuzzRecords checks that ParseRecords never panics, with or without
// labels and plain lines, and that what it returns keeps its promises.
//
//	go test -run '^$' -fuzz '^FuzzRecords$' -fuzztime 45s ./internal/data
func FuzzRecords(f *testing.F) {
	for _, s := range []string{
		`{"text": "hi", "label": "b", "id": 7}` + "\n\n" + `{"tokens": [300, 2], "label": 12}` + "\nplain line\n" + `{"text": "é", "label": "a"}`,
		`{"tokens": [1, 2.5], "label": "a"}`,
		`{"text": "x", "tokens": [1]}`,
		`{"text": "x", "label": 1e3}`,
		`{"text": "x", "label": 99999999999999999999}`,
		`{"text": "x", "label": ""}`,
		`{"tokens": [2147483648]}`,
		"\r\n \t\n",
		"{",
		`null`,
		`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`,
		`{"messages": [{"role": "system", "content": "x"}], "label": "a"}`,
		`{"messages": [{"role": "user", "content": 3}]}`,
		`{"text": "ab cd", "spans": [{"start": 3, "end": 5, "label": "X"}, {"start": 0, "end": 2, "label": "Y"}]}`,
		`{"text": "ab", "spans": [{"start": 1, "end": 0, "label": "X"}]}`,
		`{"tokens": [1, 2], "tags": ["B-X", "I-"]}`,
		`{"text": "é", "spans": null}`,
		`{"text": "a", "positive": "b", "negative": "c"}`,
		`{"text": "a", "positive": ""}`,
		`{"tokens": [1], "positive": "b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, wantLabel := range []bool{false, true} {
			for _, plain := range []bool{false, true} {
				recs, err := ParseRecords(bytes.NewReader(b), "fuzz", wantLabel, plain)
				if err != nil {
					if !strings.HasPrefix(err.Error(), "fuzz") {
						t.Fatalf("error %q does not name the input", err)
					}
					continue
				}
				if len(recs) == 0 {
					t.Fatal("no records and no error")
				}
				for _, r := range recs {
					if err := CheckSpans(slices.Clone(r.Spans), len(r.Tokens)); err != nil || r.Tags != nil && len(r.Tags) != len(r.Tokens) {
						t.Fatalf("record %+v: spans or tags that do not fit: %v", r, err)
					}
					// With wantLabel, every line carries its supervision (a
					// label, tags or spans, or an embedding pair's
					// positive), but a plain text line.
					unsupervised := r.Label == "" && r.Tags == nil && r.Spans == nil && r.Positive == nil && !(plain && r.Text)
					if len(r.Tokens) == 0 && r.Messages == nil || !strings.HasPrefix(r.Where, "fuzz:") || wantLabel && unsupervised {
						t.Fatalf("record %+v (wantLabel %v, plain %v)", r, wantLabel, plain)
					}
				}
				LabelNames(recs)
			}
		}
	})
}
