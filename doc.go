// Package tokenmix is the Go API for using models trained with tokenmix.
//
// It has no exported identifiers yet. Models are trained, compared and
// inspected with the command tokenmix (cmd/tokenmix); package mixer defines
// the token-mixer interface and package mixer/registry lists the kinds.
package tokenmix
