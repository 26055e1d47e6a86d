//go:build !unix

package arena

import "syscall"

func workerAttr() *syscall.SysProcAttr { return nil }
