package kernels

import "golang.org/x/sys/cpu"

// Path is an implementation tier. The float32 kernels dispatch on the
// current path at every call.
type Path int

const (
	PathGo     Path = iota // plain Go, every platform
	PathAVX2               // AVX2 + FMA (amd64)
	PathAVX512             // AVX-512F (amd64)
)

func (p Path) String() string {
	return [...]string{"go", "avx2", "avx512"}[p]
}

// Best is the fastest path this CPU supports.
var Best = detect()

var path = Best

func detect() Path {
	if !asmAvailable {
		return PathGo
	}
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL:
		return PathAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return PathAVX2
	}
	return PathGo
}

// CurrentPath returns the path the kernels use now.
func CurrentPath() Path { return path }

// SetPath forces the kernels onto path p and returns the previous path. It is
// a test and benchmark hook; it is not safe to call while kernels run.
// SetPath panics if p is faster than Best.
func SetPath(p Path) Path {
	if p > Best {
		panic("kernels: SetPath beyond what this CPU supports")
	}
	old := path
	path = p
	return old
}

// Paths lists every path this CPU can run, slowest first (for tests).
func Paths() []Path {
	var ps []Path
	for p := PathGo; p <= Best; p++ {
		ps = append(ps, p)
	}
	return ps
}
