// Command mkimage writes an OCI image-layout tarball holding one static binary FROM scratch, named
// so that `ctr -n k8s.io images import` stores it under that name. hack/nodeimage/build.sh uses it
// for the node image's pause and app images:
//
//	mkimage -binary bin/pause -name registry.k8s.io/pause:3.10 -path /pause -o pause.tar
//
// It prints the manifest digest. The output is reproducible: the creation time is fixed
// (-created, default the Unix epoch, or $SOURCE_DATE_EPOCH when set).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"machineapi.dev/hack/nodeimage/internal/ocilayout"
)

func main() {
	binary := flag.String("binary", "", "the static binary to put in the image (required)")
	name := flag.String("name", "", "the full image reference, with registry host and tag (required): registry.k8s.io/pause:3.10")
	file := flag.String("path", "", "where the binary lies in the image and what the image runs (default: /<binary file name>)")
	arch := flag.String("arch", runtime.GOARCH, "the architecture the binary is built for")
	created := flag.String("created", "", "the creation time, RFC 3339 (default: $SOURCE_DATE_EPOCH, else the Unix epoch)")
	out := flag.String("o", "", "the tarball to write (required)")
	flag.Parse()
	if err := run(*binary, *name, *file, *arch, *created, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(binary, name, file, arch, created, out string) error {
	if binary == "" || name == "" || out == "" || flag.NArg() > 0 {
		flag.Usage()
		return fmt.Errorf("-binary, -name and -o are required, and nothing else")
	}
	content, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	if file == "" {
		file = "/" + filepath.Base(binary)
	}
	when, err := creationTime(created)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	written, err := ocilayout.Write(&buf, ocilayout.Image{Name: name, Path: file, Binary: content, Architecture: arch, Created: when})
	if err != nil {
		return err
	}
	// Write beside the target and rename, so an interrupted run never leaves half a tarball.
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Println(written.Manifest.Digest)
	return nil
}

// creationTime parses -created, or falls back to $SOURCE_DATE_EPOCH (the reproducible-builds
// convention), or to the Unix epoch.
func creationTime(created string) (time.Time, error) {
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return time.Time{}, fmt.Errorf("-created: %w", err)
		}
		return t, nil
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		s, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		return time.Unix(s, 0), nil
	}
	return time.Unix(0, 0), nil
}
