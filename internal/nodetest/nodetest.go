// Package nodetest is what the tests that compare tokenmix with a Node
// reference share (the OpenAI SDK against the server, ONNX Runtime against
// the ONNX export): finding node and the node_modules directory that
// .ci/run installs the references into.
package nodetest

import (
	"os"
	"os/exec"
	"testing"
)

// Modules returns the path of node and the node_modules directory named by
// TOKENMIX_NODE_MODULES, and skips t when either is missing: go test ./...
// needs no Node.
func Modules(t testing.TB) (node, modules string) {
	t.Helper()
	modules = os.Getenv("TOKENMIX_NODE_MODULES")
	if modules == "" {
		t.Skip("TOKENMIX_NODE_MODULES is not set")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	return node, modules
}
