//go:build !purego

package kernels

import "syscall"

// requestAMX asks Linux once for the AMX tile data state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); until a process
// has asked, its first tile instruction faults. The permission is the
// process's, for every thread.
func requestAMX() bool {
	const sysArchPrctl, archReqXcompPerm, xfeatureXtiledata = 158, 0x1023, 18
	_, _, errno := syscall.RawSyscall(sysArchPrctl, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}
