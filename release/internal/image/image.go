package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the uid and gid the image runs as: distroless' "nonroot".
const User = 65532

// BinDir is where the binary lives in the image.
const BinDir = "/usr/local/bin"

// Binary is the binary built for one platform.
type Binary struct {
	OS, Arch string
	// Path is the binary on disk.
	Path string
}

// Options describe an image.
type Options struct {
	// Title names the image (org.opencontainers.image.title), for example machine-api.
	Title string
	// Binary is the command's file name in the image and its entrypoint.
	Binary string
	// Binaries holds one build of Binary per platform.
	Binaries []Binary
	// Version, Source (repository URL) and Revision (commit) become OCI labels and annotations.
	Version, Source, Revision string
	// Created is the time every timestamp of the image takes.
	Created time.Time
}

// Build assembles the multi-arch index.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("image %s: no binaries", o.Title)
	}
	bins := slices.Clone(o.Binaries)
	slices.SortFunc(bins, func(a, b Binary) int { return strings.Compare(a.OS+"/"+a.Arch, b.OS+"/"+b.Arch) })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range bins {
		img, err := platformImage(o, b)
		if err != nil {
			return nil, fmt.Errorf("image %s for %s/%s: %w", o.Title, b.OS, b.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: b.OS, Architecture: b.Arch}},
		})
	}
	return mutate.Annotations(idx, annotations(o)).(v1.ImageIndex), nil
}

// annotations are the OCI annotation keys, used as config labels and as manifest annotations.
func annotations(o Options) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":    o.Title,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
	}
	for k, v := range a {
		if v == "" {
			delete(a, k)
		}
	}
	return a
}

func platformImage(o Options, b Binary) (v1.Image, error) {
	binary, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, err
	}
	layerTar, err := layerContent(o.Binary, binary, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	entrypoint := BinDir + "/" + o.Binary
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS:           b.OS,
		Architecture: b.Arch,
		Created:      created,
		Config: v1.Config{
			Entrypoint: []string{entrypoint},
			User:       fmt.Sprintf("%d:%d", User, User),
			WorkingDir: "/",
			Env:        []string{"PATH=" + BinDir + ":/usr/bin:/bin"},
			Labels:     annotations(o),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "release image: " + entrypoint, Comment: o.Title + " " + o.Version},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.Annotations(img, annotations(o)).(v1.Image), nil
}

// layerContent is the image's only layer: the binary and just enough of a root file system for a
// non-root process.
func layerContent(binary string, content []byte, created time.Time) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		uid  int
		body string
		dir  bool
	}
	nonroot := fmt.Sprint(User)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: "root:x:0:\nnonroot:x:" + nonroot + ":\n"},
		{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + nonroot + ":" + nonroot + ":nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: User, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/" + binary, mode: 0o755, body: string(content)},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created.UTC(),
			Typeflag: tar.TypeReg, Size: int64(len(e.body)), Format: tar.FormatPAX,
		}
		if e.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Written says where an image went.
type Written struct {
	// Index is the digest of the multi-arch index.
	Index v1.Hash
	// Layout is the OCI image layout folder.
	Layout string
	// Tarballs maps os/arch to its docker-load tarball.
	Tarballs map[string]string
	// Manifests maps os/arch to its image manifest's digest.
	Manifests map[string]v1.Hash
}

// Write writes the index into dir as an OCI image layout (dir/oci, its ref name the version) and
// one docker-load tarball per platform tagged repository:version. dir/oci is replaced.
func Write(idx v1.ImageIndex, dir, repository, version string) (*Written, error) {
	w := &Written{Layout: filepath.Join(dir, "oci"), Tarballs: map[string]string{}, Manifests: map[string]v1.Hash{}}
	var err error
	if w.Index, err = idx.Digest(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(w.Layout); err != nil {
		return nil, err
	}
	p, err := layout.Write(w.Layout, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return nil, err
	}
	tag, err := name.NewTag(repository + ":" + version)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, err
		}
		platform := desc.Platform.OS + "/" + desc.Platform.Architecture
		file := filepath.Join(dir, fmt.Sprintf("%s_%s_%s_%s.docker.tar", filepath.Base(tag.RepositoryStr()), version, desc.Platform.OS, desc.Platform.Architecture))
		if err := tarball.WriteToFile(file, tag, img); err != nil {
			return nil, err
		}
		w.Tarballs[platform] = file
		w.Manifests[platform] = desc.Digest
	}
	return w, nil
}
