// Package check decides whether a module version may be released: it runs an ordered pipeline of
// checks that stops at the first one that fails, and says what to change.
//
// The checks, in order: the version (canonical, matching the module's stability and major path
// suffix, declared in versions.yaml, newer than the last tag and not yet tagged); a clean work
// tree; the module's requires of sibling modules point at tagged versions whose source is what the
// in-repo build uses; `go mod tidy -diff`, `go vet` and `go test` pass with GOWORK=off; and the
// consumer test ([Consumer]): a throwaway module outside the repository requires the candidate
// through a file:// GOPROXY cut from the tags, with GOWORK=off and a fresh module cache, and builds
// every package of it. That last step proves the release resolves without go.work and without the
// committed relative replaces (a dependency's replace directives are ignored by its consumers).
//
// Start reading at [Run].
package check
