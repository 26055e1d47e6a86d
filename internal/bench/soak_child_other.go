//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing off Linux: a soak killed there leaves its
// server running.
func dieWithParent(*exec.Cmd) {}
