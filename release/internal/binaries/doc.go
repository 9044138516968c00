// Package binaries runs GoReleaser for one module and reads back what it built.
//
// GoReleaser OSS has no monorepo support and cannot parse the repository's <module>/vX.Y.Z tags,
// so each module has its own configuration (release/goreleaser/<module>.yaml, dist/<module>/) and
// this package hands GoReleaser the version: GORELEASER_CURRENT_TAG and RELEASE_VERSION, with
// --skip=validate for a release (after checking itself that the tree is clean and that the tag
// <module>/<version> names HEAD) or --snapshot for a snapshot, whose version is
// <version>-snapshot.<short commit>. A binary whose cmd/<binary> folder does not exist yet is
// skipped (SKIP_<BINARY>=true). A repository without a remote gets remote.origin.url from
// versions.yaml's source through git's GIT_CONFIG_* environment, since GoReleaser asks git for
// it; the repository's configuration is never written.
package binaries
