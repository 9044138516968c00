// Package importcheck enforces the repository's dependency direction, which go.mod files alone
// cannot: Go lets any module import any other once a replace or go.work makes it resolvable.
//
// The rules (see docs/architecture.md):
//
//   - drain and nodelink import no other machineapi.dev module;
//   - machine-api may import drain and nodelink; cluster-api may import machine-api and what
//     machine-api may import; release imports none of them;
//   - nothing outside the drain module imports k8s.io/kubectl (it pulls ~800 packages);
//   - a package under <module>/api/ imports only the standard library, k8s.io/api,
//     k8s.io/apimachinery and the api packages of modules it may depend on;
//   - code under machine-api/examples/ (example providers) imports only machineapi.dev/machine-api
//     from this repository;
//   - inside a module, a package under internal/controller/<x>/ (one controller per package)
//     imports no package under internal/controller/<y>/ of the same module: what two controllers
//     share lives in a package under internal/ that both import.
//
// Check walks the Go files (tests included) of a repository checkout and returns every import that
// breaks a rule; cmd/importcheck runs it for make verify.
package importcheck
