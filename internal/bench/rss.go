package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

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
