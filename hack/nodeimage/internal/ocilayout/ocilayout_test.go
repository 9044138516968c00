package ocilayout

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// layout is a written layout read back: every member by name.
type layout map[string][]byte

// readLayout reads a layout tar member by member with archive/tar, failing on duplicates.
func readLayout(t *testing.T, data []byte) layout {
	t.Helper()
	out := layout{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the layout tar: %v", err)
		}
		if _, dup := out[hdr.Name]; dup {
			t.Fatalf("member %s appears twice", hdr.Name)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", hdr.Name, err)
		}
		out[hdr.Name] = body
	}
}

// blob returns the blob a descriptor points at, after checking that its size and digest match.
func (l layout) blob(t *testing.T, d Descriptor) []byte {
	t.Helper()
	data, ok := l[blobPath(d.Digest)]
	if !ok {
		t.Fatalf("blob %s is not in the layout", d.Digest)
	}
	if int64(len(data)) != d.Size {
		t.Errorf("blob %s: size %d, descriptor says %d", d.Digest, len(data), d.Size)
	}
	if got := digestOf(data); got != d.Digest {
		t.Errorf("blob %s: content digest is %s", d.Digest, got)
	}
	return data
}

func decode(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %s: %v\n%s", what, err, data)
	}
}

func TestWriteIsAConsistentLayout(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		img       Image
		wantTag   string
		wantFiles []string // the layer's members, in order
	}{
		"pause at the root": {
			img:       Image{Name: "registry.k8s.io/pause:3.10", Path: "/pause", Binary: []byte("\x7fELF pause"), Architecture: "amd64", Created: created},
			wantTag:   "3.10",
			wantFiles: []string{"pause"},
		},
		"app in a nested directory, registry with a port": {
			img:       Image{Name: "localhost:5000/machineapi/app:v1", Path: "/usr/local/bin/app", Binary: bytes.Repeat([]byte("app"), 100000), Architecture: "arm64", Created: created},
			wantTag:   "v1",
			wantFiles: []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/app"},
		},
		"local registry name": {
			img:       Image{Name: "machineapi.local/app:v1", Path: "/app", Binary: []byte{0}, Architecture: "amd64", Created: created.Add(500 * time.Millisecond)},
			wantTag:   "v1",
			wantFiles: []string{"app"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			written, err := Write(&buf, tc.img)
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			l := readLayout(t, buf.Bytes())

			if got := string(l["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
				t.Errorf("oci-layout = %s", got)
			}
			var index Index
			decode(t, "index.json", l["index.json"], &index)
			if index.SchemaVersion != 2 || index.MediaType != MediaTypeIndex || len(index.Manifests) != 1 {
				t.Fatalf("index.json = %+v, want one manifest in a schema 2 OCI index", index)
			}
			md := index.Manifests[0]
			if md.Digest != written.Manifest.Digest || md.MediaType != MediaTypeManifest {
				t.Errorf("index lists %s %s, Write returned %s", md.MediaType, md.Digest, written.Manifest.Digest)
			}
			if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != tc.img.Architecture {
				t.Errorf("index platform = %+v, want linux/%s", md.Platform, tc.img.Architecture)
			}
			if got := md.Annotations[AnnotationImageName]; got != tc.img.Name {
				t.Errorf("%s = %q, want %q", AnnotationImageName, got, tc.img.Name)
			}
			if got := md.Annotations[AnnotationRefName]; got != tc.wantTag {
				t.Errorf("%s = %q, want %q", AnnotationRefName, got, tc.wantTag)
			}

			var manifest Manifest
			decode(t, "manifest", l.blob(t, md), &manifest)
			if manifest.SchemaVersion != 2 || manifest.MediaType != MediaTypeManifest || len(manifest.Layers) != 1 {
				t.Fatalf("manifest = %+v, want one layer in a schema 2 OCI manifest", manifest)
			}
			if manifest.Config.MediaType != MediaTypeConfig || manifest.Layers[0].MediaType != MediaTypeLayer {
				t.Errorf("media types: config %s, layer %s", manifest.Config.MediaType, manifest.Layers[0].MediaType)
			}

			var config Config
			decode(t, "config", l.blob(t, manifest.Config), &config)
			if config.OS != "linux" || config.Architecture != tc.img.Architecture {
				t.Errorf("config platform = %s/%s, want linux/%s", config.OS, config.Architecture, tc.img.Architecture)
			}
			if len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != tc.img.Path {
				t.Errorf("entrypoint = %q, want [%s]", config.Config.Entrypoint, tc.img.Path)
			}
			if want := tc.img.Created.UTC().Truncate(time.Second).Format(time.RFC3339); config.Created != want {
				t.Errorf("created = %s, want %s", config.Created, want)
			}

			// The diffID is the digest of the uncompressed layer; the layer digest that of the
			// gzip stream.
			compressed := l.blob(t, manifest.Layers[0])
			zr, err := gzip.NewReader(bytes.NewReader(compressed))
			if err != nil {
				t.Fatalf("the layer is not gzip: %v", err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("decompressing the layer: %v", err)
			}
			if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != digestOf(raw) || written.DiffID != digestOf(raw) {
				t.Errorf("diff_ids = %v (Write said %s), uncompressed layer is %s", config.RootFS.DiffIDs, written.DiffID, digestOf(raw))
			}
			if config.RootFS.DiffIDs[0] == manifest.Layers[0].Digest {
				t.Errorf("diffID equals the compressed layer digest %s", manifest.Layers[0].Digest)
			}

			tr := tar.NewReader(bytes.NewReader(raw))
			var files []string
			for {
				hdr, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("reading the layer: %v", err)
				}
				files = append(files, hdr.Name)
				if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Mode != 0o755 {
					t.Errorf("layer member %s: uid %d gid %d mode %o, want root and 755", hdr.Name, hdr.Uid, hdr.Gid, hdr.Mode)
				}
				if hdr.Typeflag == tar.TypeReg {
					body, _ := io.ReadAll(tr)
					if !bytes.Equal(body, tc.img.Binary) {
						t.Errorf("layer file %s does not hold the binary", hdr.Name)
					}
				}
			}
			if strings.Join(files, " ") != strings.Join(tc.wantFiles, " ") {
				t.Errorf("layer members = %v, want %v", files, tc.wantFiles)
			}

			// Nothing else in the layout: the three blobs, the two files and two directories.
			if len(l) != 7 {
				names := make([]string, 0, len(l))
				for n := range l {
					names = append(names, n)
				}
				t.Errorf("layout members = %v, want oci-layout, index.json, blobs/, blobs/sha256/ and three blobs", names)
			}

			var again bytes.Buffer
			if _, err := Write(&again, tc.img); err != nil {
				t.Fatalf("second Write: %v", err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Error("two writes of the same image differ")
			}
		})
	}
}

func TestWriteRejectsBadImages(t *testing.T) {
	good := Image{Name: "registry.k8s.io/pause:3.10", Path: "/pause", Binary: []byte("x"), Architecture: "amd64"}
	tests := map[string]struct {
		change  func(*Image)
		wantErr string
	}{
		"no tag":                  {func(i *Image) { i.Name = "registry.k8s.io/pause" }, "is not a full image reference"},
		"no registry host":        {func(i *Image) { i.Name = "pause:3.10" }, "is not a full image reference"},
		"docker hub short name":   {func(i *Image) { i.Name = "library/app:v1" }, "is not a full image reference"},
		"upper case repository":   {func(i *Image) { i.Name = "registry.k8s.io/Pause:3.10" }, "is not a full image reference"},
		"digest instead of a tag": {func(i *Image) { i.Name = "registry.k8s.io/pause@sha256:abc" }, "is not a full image reference"},
		"relative path":           {func(i *Image) { i.Path = "pause" }, "is not a clean absolute file path"},
		"root path":               {func(i *Image) { i.Path = "/" }, "is not a clean absolute file path"},
		"unclean path":            {func(i *Image) { i.Path = "/bin/../pause" }, "is not a clean absolute file path"},
		"empty binary":            {func(i *Image) { i.Binary = nil }, "the binary is empty"},
		"no architecture":         {func(i *Image) { i.Architecture = "" }, "the architecture is empty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			img := good
			tc.change(&img)
			var buf bytes.Buffer
			_, err := Write(&buf, img)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Write error = %v, want one containing %q", err, tc.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes for an invalid image", buf.Len())
			}
		})
	}
}
