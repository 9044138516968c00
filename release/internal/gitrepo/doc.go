// Package gitrepo runs the few git commands a release needs: module tags (<module>/vX.Y.Z), the
// commits that touched a module, whether the work tree is clean, exporting a revision without
// touching the repository's work trees, and creating annotated tags.
//
// It never pushes, never checks out and never changes the index: other engineers may be working in
// the same checkout. The only write is [Repo.CreateTag].
package gitrepo
