package image

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var sourceDateEpoch = time.Unix(1767323045, 0)

// fakeBinaries writes one stand-in binary per platform; the image treats them as opaque bytes.
func fakeBinaries(t *testing.T) []Binary {
	t.Helper()
	dir := t.TempDir()
	var bins []Binary
	for _, arch := range []string{"arm64", "amd64"} {
		p := filepath.Join(dir, arch, "machine-manager")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!machine-manager for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, Binary{OS: "linux", Arch: arch, Path: p})
	}
	return bins
}

func options(bins []Binary, created time.Time) Options {
	return Options{
		Title: "machine-api", Binary: "machine-manager", Binaries: bins,
		Version: "v0.4.0", Source: "https://example.test/repo", Revision: "0123456789abcdef", Created: created,
	}
}

func build(t *testing.T, o Options) *Written {
	t.Helper()
	idx, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(idx, t.TempDir(), "example.test/images/machine-api", o.Version)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func fileDigest(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func TestBuildIsReproducible(t *testing.T) {
	bins := fakeBinaries(t)
	first, second := build(t, options(bins, sourceDateEpoch)), build(t, options(bins, sourceDateEpoch))
	if first.Index != second.Index {
		t.Errorf("same inputs, different index digests: %s and %s", first.Index, second.Index)
	}
	for platform, tarball := range first.Tarballs {
		if fileDigest(t, tarball) != fileDigest(t, second.Tarballs[platform]) {
			t.Errorf("same inputs, different docker tarballs for %s", platform)
		}
	}
	// The digest does depend on the inputs: otherwise the assertion above could not fail.
	if later := build(t, options(bins, sourceDateEpoch.Add(time.Second))); later.Index == first.Index {
		t.Errorf("a different SOURCE_DATE_EPOCH gave the same digest %s", later.Index)
	}
}

func TestImageRunsTheBinaryAsNonRootOnEachPlatform(t *testing.T) {
	w := build(t, options(fakeBinaries(t), sourceDateEpoch))
	p, err := layout.FromPath(w.Layout)
	if err != nil {
		t.Fatal(err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	rootManifest, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rootManifest.Manifests) != 1 || rootManifest.Manifests[0].Digest != w.Index ||
		rootManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v0.4.0" {
		t.Fatalf("layout index.json = %+v, want one entry: index %s named v0.4.0", rootManifest.Manifests, w.Index)
	}
	idx, err := root.ImageIndex(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(im.Manifests); got != 2 {
		t.Fatalf("index has %d manifests, want amd64 and arm64", got)
	}
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != desc.Platform.Architecture || cfg.OS != "linux" {
			t.Errorf("%s: config platform %s/%s", desc.Platform.Architecture, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/usr/local/bin/machine-manager" {
			t.Errorf("%s: user %q entrypoint %q, want 65532:65532 running /usr/local/bin/machine-manager", desc.Platform.Architecture, cfg.Config.User, cfg.Config.Entrypoint)
		}
		wantLabels := map[string]string{
			"org.opencontainers.image.version":  "v0.4.0",
			"org.opencontainers.image.source":   "https://example.test/repo",
			"org.opencontainers.image.revision": "0123456789abcdef",
			"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
		}
		for k, v := range wantLabels {
			if cfg.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", desc.Platform.Architecture, k, cfg.Config.Labels[k], v)
			}
		}
		if !cfg.Created.Time.Equal(sourceDateEpoch) {
			t.Errorf("%s: created %v, want %v", desc.Platform.Architecture, cfg.Created, sourceDateEpoch)
		}
		hdr, body := findInLayers(t, img, "usr/local/bin/machine-manager")
		if hdr.Mode != 0o755 || body != "#!machine-manager for "+desc.Platform.Architecture || !hdr.ModTime.Equal(sourceDateEpoch) {
			t.Errorf("%s: binary mode %o time %v body %q", desc.Platform.Architecture, hdr.Mode, hdr.ModTime, body)
		}
	}
}

func TestDockerTarballLoadsAsTheTaggedImage(t *testing.T) {
	w := build(t, options(fakeBinaries(t), sourceDateEpoch))
	img, err := tarball.ImageFromPath(w.Tarballs["linux/arm64"], nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" {
		t.Errorf("arm64 tarball holds a %s image", cfg.Architecture)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(w.Tarballs["linux/arm64"]) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "example.test/images/machine-api:v0.4.0" {
		t.Errorf("docker manifest = %+v, want one image tagged example.test/images/machine-api:v0.4.0", m)
	}
}

// findInLayers returns the header and content of a file in the image's layers.
func findInLayers(t *testing.T, img v1.Image, path string) (*tar.Header, string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if hdr.Name == path {
				body, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				rc.Close()
				return hdr, string(body)
			}
		}
		rc.Close()
	}
	t.Fatalf("no %s in the image", path)
	return nil, ""
}
