// Package plan works out what releasing the repository now would take: for each module its last
// tag, the commits since that touched it, its exported-API changes against that tag, the next
// version those imply, and the order in which the modules must be released with the intra-repo
// require bumps that order implies.
//
// Invariants: the order follows the go.mod requires between the repository's modules (a module
// is released after every sibling it requires); a module whose sibling dependency is released is
// itself released, at least as a patch, with its require bumped, because consumers import only the
// top module (machine-api) and get a dependency's fix only through a release that requires it.
//
// Plan reads the repository and never changes it: the last tag's tree is exported with git
// archive into a temporary folder. Start reading at [Make].
package plan
