package kernels

import (
	"syscall"

	"golang.org/x/sys/cpu"
)

// bf16Paths lists the bf16 GEMM paths of this CPU, slowest first: "go",
// "avx512bf16" where it has AVX512-BF16 (VDPBF16PS), and "amx" where it
// also has AMX-BF16 (TDPBF16PS) and Linux grants the process its tile
// data.
var bf16Paths = func() []string {
	paths := []string{"go"}
	if !cpu.X86.HasAVX512BF16 || Best != PathAVX512 {
		return paths
	}
	paths = append(paths, "avx512bf16")
	if cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && requestAMX() {
		paths = append(paths, "amx")
	}
	return paths
}()

// bf16Best is the fastest bf16 GEMM path of this CPU.
var bf16Best = bf16Paths[len(bf16Paths)-1]

// requestAMX asks Linux once for the AMX tile data state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); until a process
// has asked, its first tile instruction faults. The permission is the
// process's, for every thread.
func requestAMX() bool {
	const sysArchPrctl, archReqXcompPerm, xfeatureXtiledata = 158, 0x1023, 18
	_, _, errno := syscall.RawSyscall(sysArchPrctl, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}

// hasBF16Conv reports whether the vector conversions run: they need only
// AVX-512 (F and BW).
func hasBF16Conv() bool { return true }
