package ocilayout

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"
)

// Media types and annotation keys of the OCI image spec and of containerd.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// AnnotationRefName is the OCI annotation for an image's reference: its tag, as the spec
	// suggests and as containerd's exporter writes it.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationImageName is containerd's annotation for the full image name; its importer
	// prefers it to AnnotationRefName.
	AnnotationImageName = "io.containerd.image.name"
)

// defaultPath is the PATH a scratch image's processes get, as a Dockerfile build would set it.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Image is a single-layer image FROM scratch that holds one executable.
type Image struct {
	// Name is the full reference the image is imported as, with a registry host and a tag:
	// registry.k8s.io/pause:3.10.
	Name string
	// Path is where the executable lies in the image and what the image runs: /pause.
	Path string
	// Binary is the executable's content (a static binary: the image has nothing else).
	Binary []byte
	// Architecture is the GOARCH the binary was built for; the OS is always linux.
	Architecture string
	// Created is the time recorded in the config and on the layer's files; a fixed value keeps
	// the output reproducible.
	Created time.Time
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is the platform of a manifest listed in an index.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Index is the layout's index.json.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Config is the image configuration, with the fields a scratch image needs.
type Config struct {
	Created      string        `json:"created"`
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Config       RuntimeConfig `json:"config"`
	RootFS       RootFS        `json:"rootfs"`
	History      []History     `json:"history"`
}

// RuntimeConfig is what a container of the image runs by default.
type RuntimeConfig struct {
	Entrypoint []string `json:"Entrypoint"`
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
}

// RootFS lists the layers' uncompressed digests (diffIDs), bottom first.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// History says how a layer was made.
type History struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// Written is what Write put in the layout, for callers that record digests.
type Written struct {
	// Manifest is the descriptor index.json lists, with its platform and name annotations.
	Manifest Descriptor
	// Config and Layer are the manifest's config and only layer.
	Config, Layer Descriptor
	// DiffID is the digest of the uncompressed layer, as the config lists it.
	DiffID string
}

// referencePattern is the subset of the distribution reference grammar accepted for Name: a
// registry host (with a dot, a port or "localhost", so that nothing normalises it to docker.io),
// lower-case path components and a tag.
var referencePattern = regexp.MustCompile(
	`^(localhost|[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)+)(:[0-9]+)?` +
		`(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)+` +
		`:([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$`)

// Validate reports what is wrong with img, if anything.
func (img Image) Validate() error {
	var errs []error
	if !referencePattern.MatchString(img.Name) {
		errs = append(errs, fmt.Errorf("name %q is not a full image reference with a registry host and a tag (registry.k8s.io/pause:3.10)", img.Name))
	}
	if !path.IsAbs(img.Path) || path.Clean(img.Path) != img.Path || img.Path == "/" {
		errs = append(errs, fmt.Errorf("path %q is not a clean absolute file path (/pause)", img.Path))
	}
	if len(img.Binary) == 0 {
		errs = append(errs, errors.New("the binary is empty"))
	}
	if img.Architecture == "" {
		errs = append(errs, errors.New("the architecture is empty"))
	}
	return errors.Join(errs...)
}

// tag is the part of Name after the last colon (Validate guarantees there is one, after the
// last slash).
func (img Image) tag() string {
	return img.Name[strings.LastIndex(img.Name, ":")+1:]
}

// Write writes img as an OCI image layout in one tar stream to w: oci-layout, index.json and the
// three blobs (layer, config, manifest) under blobs/sha256/.
func Write(w io.Writer, img Image) (Written, error) {
	if err := img.Validate(); err != nil {
		return Written{}, fmt.Errorf("image: %w", err)
	}
	created := img.Created.UTC().Truncate(time.Second)

	rawLayer, err := layerTar(img.Path, img.Binary, created)
	if err != nil {
		return Written{}, err
	}
	layer, err := gzipped(rawLayer)
	if err != nil {
		return Written{}, err
	}
	diffID := digestOf(rawLayer)

	config, err := json.Marshal(Config{
		Created:      created.Format(time.RFC3339),
		Architecture: img.Architecture,
		OS:           "linux",
		Config:       RuntimeConfig{Entrypoint: []string{img.Path}, Env: []string{defaultPath}, WorkingDir: "/"},
		RootFS:       RootFS{Type: "layers", DiffIDs: []string{diffID}},
		History:      []History{{Created: created.Format(time.RFC3339), CreatedBy: "machineapi mkimage: COPY " + img.Path}},
	})
	if err != nil {
		return Written{}, err
	}
	out := Written{
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: digestOf(config), Size: int64(len(config))},
		Layer:  Descriptor{MediaType: MediaTypeLayer, Digest: digestOf(layer), Size: int64(len(layer))},
		DiffID: diffID,
	}
	manifest, err := json.Marshal(Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest, Config: out.Config, Layers: []Descriptor{out.Layer},
	})
	if err != nil {
		return Written{}, err
	}
	out.Manifest = Descriptor{
		MediaType: MediaTypeManifest, Digest: digestOf(manifest), Size: int64(len(manifest)),
		Platform:    &Platform{Architecture: img.Architecture, OS: "linux"},
		Annotations: map[string]string{AnnotationImageName: img.Name, AnnotationRefName: img.tag()},
	}
	index, err := json.Marshal(Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{out.Manifest}})
	if err != nil {
		return Written{}, err
	}

	tw := tar.NewWriter(w)
	members := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/", nil},
		{"blobs/sha256/", nil},
		{blobPath(out.Layer.Digest), layer},
		{blobPath(out.Config.Digest), config},
		{blobPath(out.Manifest.Digest), manifest},
	}
	for _, m := range members {
		if err := writeMember(tw, m.name, m.data, created); err != nil {
			return Written{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Written{}, fmt.Errorf("closing the layout tar: %w", err)
	}
	return out, nil
}

// layerTar is the layer's uncompressed tar: the directories above the binary, then the binary,
// owned by root, executable by all.
func layerTar(file string, binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	rel := strings.TrimPrefix(file, "/")
	var dirs []string
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		dirs = append([]string{d + "/"}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("writing layer directory %s: %w", d, err)
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o755, Size: int64(len(binary)), ModTime: created, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("writing layer file %s: %w", rel, err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("writing layer file %s: %w", rel, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// gzipped compresses data with a header that carries no name and no time, so that equal input
// gives equal output.
func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeMember writes one member of the layout tar: a directory when name ends in a slash, else a
// read-only file.
func writeMember(tw *tar.Writer, name string, data []byte, created time.Time) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}
	if strings.HasSuffix(name, "/") {
		hdr = &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: created, Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// digestOf is data's OCI digest: sha256:<hex>.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blobPath is where a blob lies in the layout: blobs/sha256/<hex>.
func blobPath(digest string) string {
	return "blobs/" + strings.Replace(digest, ":", "/", 1)
}
