// Package versions owns release/versions.yaml (which modules the repository releases, at which
// version and stability) and the semantic-versioning rules that turn a kind of change into the next
// version.
//
// The bump rules, by module version:
//
//   - v1 and up: an incompatible API change needs a major version (and a /vN module path), a
//     compatible addition a minor version, anything else a patch.
//   - v0: an incompatible API change needs a minor version; a compatible addition or any other change
//     a patch. This is the rule Cargo uses for 0.y.z and it keeps `go get -u=patch` safe on a v0 line:
//     a consumer pinned to v0.4.x only ever gets compatible changes, and a minor bump is the signal
//     to read the changelog.
//
// Start reading at [Manifest] and [Next].
package versions
