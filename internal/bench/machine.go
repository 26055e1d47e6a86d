package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// CPUName returns the CPU's model name as /proc/cpuinfo gives it (the
// "model name" line, or "Model" on some ARM boards), or "" where there is
// no such file or line.
func CPUName() string {
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

// MachineLine sums up where a measurement ran in one line: OS and
// architecture, CPU (as CPUName gives it; "" reads "CPU model unknown"),
// threads (and jobs, when more than one ran at once), the float32 and bf16
// kernel paths, and the Go version.
func MachineLine(cpu string, threads, jobs int, kernels, bf16Kernels string) string {
	if cpu == "" {
		cpu = "CPU model unknown"
	}
	th := fmt.Sprintf("%d threads", threads)
	if jobs > 1 {
		th = fmt.Sprintf("%d jobs × %d threads", jobs, threads)
	}
	return fmt.Sprintf("%s/%s, %s, %s, kernels %s (bf16 %s), %s",
		runtime.GOOS, runtime.GOARCH, cpu, th, kernels, bf16Kernels, runtime.Version())
}
