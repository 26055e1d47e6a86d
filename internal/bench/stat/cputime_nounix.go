//go:build !unix

package stat

import "time"

// ProcessCPU returns 0: the platform does not report a process's CPU time.
func ProcessCPU() time.Duration { return 0 }
