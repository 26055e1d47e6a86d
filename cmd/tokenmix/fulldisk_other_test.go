//go:build !linux

package main

// tmpfsChild reports that there is no child's job: TestTrainFullTmpfs
// runs on Linux only.
func tmpfsChild() (code int, ok bool) { return 0, false }
