// Package image builds a module's OCI image from its release binaries without a container engine
// or a registry, with go-containerregistry: an empty base plus one layer holding the binary (in
// /usr/local/bin, with /etc/passwd and /etc/group naming the non-root user 65532 and a /tmp), run
// as 65532:65532, labelled with the OCI annotations for version, source, revision and creation
// time. One image per platform, gathered in a multi-arch index, written as an OCI image layout and
// as one docker-load tarball per platform.
//
// Builds are reproducible: every timestamp (file times in the layer, the config's created time,
// the history, the org.opencontainers.image.created label) is the given creation time, normally
// SOURCE_DATE_EPOCH or the release commit's time, and platforms are ordered, so the same binaries
// and options always give the same digests. Start reading at [Build].
package image
