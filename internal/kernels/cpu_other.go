//go:build !amd64 || purego

package kernels

const asmAvailable = false
