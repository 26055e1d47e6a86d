//go:build !(linux || darwin || freebsd)

package run

import "errors"

// FreeSpace returns the bytes available to an unprivileged user on the
// filesystem that holds path; on this system it cannot tell.
func FreeSpace(path string) (int64, error) {
	return 0, errors.New("free space unknown on this system")
}
