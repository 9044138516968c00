// Package ocilayout writes an OCI image layout (image-spec v1.1) as one tar stream: a
// single-platform image FROM scratch whose only layer holds one static binary, named by the
// annotations containerd's importer reads, so that `ctr -n k8s.io images import <file>` stores it
// under that name with nothing pulled from a registry.
//
// The output is deterministic: the same Image gives the same bytes (fixed timestamps, sorted
// members, a gzip header without name or time), so the node image's pins determine its digests.
// Start with Write; Image says what goes in.
package ocilayout
