// Package lint holds the tests of the repository's lint set-up: the one golangci-lint
// configuration at the root (.golangci.yml), which make lint and make verify run in every module
// with the golangci-lint this module pins (kube-api-linter compiled in, see go.mod).
//
// The tests plant one violation of each rule in a throwaway module, run the linter on it with
// that configuration and check that it fails and reports each of them, and that the same module
// without the violations passes; so a configuration change that silently turns a rule off fails
// make test. They also check that every controller package has its depguard rule, since depguard
// cannot express "no other controller package" without naming each one.
//
// The package has no code of its own: everything is in its tests.
package lint
