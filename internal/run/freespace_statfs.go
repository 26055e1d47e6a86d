//go:build linux || darwin || freebsd

package run

import "syscall"

// FreeSpace returns the bytes available to an unprivileged user on the
// filesystem that holds path.
func FreeSpace(path string) (int64, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return 0, err
	}
	return int64(s.Bavail) * int64(s.Bsize), nil
}
