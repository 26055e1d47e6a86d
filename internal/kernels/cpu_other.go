//go:build !amd64

package kernels

const asmAvailable = false
