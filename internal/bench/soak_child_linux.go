package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel send cmd SIGTERM (the server drains and
// exits) when this process dies, even by SIGKILL, so that a killed soak
// leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
