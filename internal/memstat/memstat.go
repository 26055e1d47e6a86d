// Package memstat reads the memory figures of the process and the machine
// from /proc, and formats byte counts.
package memstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSS returns this process's peak resident set size in bytes (VmHWM
// from /proc/self/status). It returns an error where /proc is unavailable.
func PeakRSS() (int64, error) { return procKB("/proc/self/status", "VmHWM") }

// procKB returns the "<key>: N kB" line of a /proc file, in bytes.
func procKB(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("memstat: unexpected %s line %q", key, line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memstat: %s: %v", key, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("memstat: no %s in %s", key, path)
}

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
func AvailableMemory() (int64, error) { return procKB("/proc/meminfo", "MemAvailable") }
