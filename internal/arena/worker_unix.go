//go:build unix

package arena

import "syscall"

// workerAttr puts a worker in a process group of its own, so a terminal's
// Ctrl-C reaches only the arena, which then asks each worker once to save
// and stop. (A second signal to a worker would end it at once, unsaved.)
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
