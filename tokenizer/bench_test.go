package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchText is the non-test .go files of Go's net/http, the text
// scripts/bench_tokenizer.sh also gives js-tiktoken.
func benchText(b *testing.B) string {
	dir := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Skip(err)
	}
	var sb strings.Builder
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			t, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				b.Fatal(err)
			}
			sb.Write(t)
		}
	}
	return sb.String()
}

func benchEncode(b *testing.B, name string) {
	tk := reference(b)[name]
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var ids []int
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m0 := ms.Mallocs
	b.ResetTimer()
	for range b.N {
		ids = tk.AppendEncode(ids[:0], text)
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-m0)/float64(b.N)/(float64(len(text))/1e6), "allocs/MB")
}

func BenchmarkEncodeCL100K(b *testing.B) { benchEncode(b, "cl100k") }
func BenchmarkEncodeGPT2(b *testing.B)   { benchEncode(b, "gpt2") }

func BenchmarkPiecesCL100K(b *testing.B) {
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	for range b.N {
		CL100K.Pieces(text, func(string) bool { return true })
	}
}
