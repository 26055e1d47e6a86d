//go:build !purego

package kernels

const asmAvailable = true
