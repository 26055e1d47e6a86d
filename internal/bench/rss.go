package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// PeakRSS returns this process's peak resident set size in bytes (VmHWM
// from /proc/self/status). It returns an error where /proc is unavailable.
func PeakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		fields := strings.Fields(line[len("VmHWM:"):])
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("bench: unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: VmHWM: %v", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("bench: no VmHWM in /proc/self/status")
}

// InChild re-executes this binary with args and extra environment
// variables (KEY=VALUE), so that one measurement's peak RSS is not
// polluted by others, and decodes the child's standard output, one JSON
// value, into dst. The child's standard error passes through.
func InChild(dst any, env []string, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("bench: child %s: %v", strings.Join(args, " "), err)
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(dst); err != nil {
		return fmt.Errorf("bench: child output %q: %v", out, err)
	}
	return nil
}

// MiB formats n bytes as MiB with one decimal.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// FormatBytes formats a byte count in binary units ("–" for n ≤ 0).
func FormatBytes(n int64) string {
	switch {
	case n <= 0:
		return "–"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// AvailableMemory returns the memory the kernel says new work can use
// without swapping (MemAvailable from /proc/meminfo), in bytes. It returns
// an error where /proc is unavailable.
func AvailableMemory() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "MemAvailable:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("bench: unexpected MemAvailable line %q", line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: MemAvailable: %v", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("bench: no MemAvailable in /proc/meminfo")
}
