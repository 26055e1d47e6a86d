package arena

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// cpuName returns the CPU's model name as /proc/cpuinfo gives it (the
// "model name" line, or "Model" on some ARM boards), or "" where there is
// no such file or line.
func cpuName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if k = strings.TrimSpace(k); ok && (k == "model name" || k == "Model") {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// machineLine is File.Machine: OS and architecture, CPU, threads (and
// jobs), kernel paths and Go version, in one line.
func machineLine(f *File) string {
	cpu := f.CPU
	if cpu == "" {
		cpu = "CPU model unknown"
	}
	threads := fmt.Sprintf("%d threads", f.Threads)
	if f.Jobs > 1 {
		threads = fmt.Sprintf("%d jobs × %d threads", f.Jobs, f.Threads)
	}
	return fmt.Sprintf("%s/%s, %s, %s, kernels %s (bf16 %s), %s",
		runtime.GOOS, runtime.GOARCH, cpu, threads, f.Kernels, f.BF16Kernels, runtime.Version())
}
