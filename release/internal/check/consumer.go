package check

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/goproxy"
)

// ConsumerOptions describe a consumer test.
type ConsumerOptions struct {
	Repo *gitrepo.Repo
	// Module is the candidate's folder; Version the version it is served as (cut from HEAD).
	Module  string
	Version string
	// Modules are every released module's folder: their tags are served too.
	Modules []string
	// Log receives progress; nil discards it.
	Log io.Writer
}

// ConsumerResult says what the consumer resolved.
type ConsumerResult struct {
	// Resolved maps each repository module in the consumer's build list to its version.
	Resolved map[string]string
	// CandidateGoMod is the go.mod the proxy served for the candidate, replaces and all.
	CandidateGoMod []byte
}

// Consumer builds a throwaway module that requires the candidate, outside the repository, with
// GOWORK=off and a fresh module cache, resolving the repository's modules only through a file://
// GOPROXY cut from the tags (and the candidate from HEAD). Every other module comes from the
// machine's module cache, then the configured GOPROXY. It builds the candidate's importable
// packages from the consumer and then every package of the candidate (commands and internal
// ones included), and checks that no repository module was replaced.
func Consumer(ctx context.Context, o ConsumerOptions) (*ConsumerResult, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	tmp, err := os.MkdirTemp("", "release-consumer-")
	if err != nil {
		return nil, err
	}
	proxyDir, modDir, cacheDir := filepath.Join(tmp, "proxy"), filepath.Join(tmp, "consumer"), filepath.Join(tmp, "modcache")
	env := consumerEnv(proxyDir, cacheDir)
	defer func() {
		// The module cache is read-only; go clean knows how to remove it.
		_, _ = goCmd(context.WithoutCancel(ctx), tmp, env, "clean", "-modcache")
		_ = os.RemoveAll(tmp)
	}()

	versions, err := goproxy.Tagged(ctx, o.Repo, o.Modules)
	if err != nil {
		return nil, err
	}
	versions = append(versions, goproxy.Version{Dir: o.Module, Version: o.Version, Rev: "HEAD"})
	served, err := goproxy.Write(ctx, o.Repo, proxyDir, versions)
	if err != nil {
		return nil, err
	}
	res := &ConsumerResult{Resolved: map[string]string{}, CandidateGoMod: served[len(served)-1].GoMod}
	candidate := served[len(served)-1].Path
	var ours []string
	for _, s := range served {
		ours = append(ours, s.Path)
	}
	env = append(env, "GONOSUMDB="+strings.Join(ours, ","))
	fmt.Fprintf(o.Log, "   proxy %s serves %d versions of this repository's modules\n", proxyDir, len(served))

	importable, err := importablePackages(ctx, filepath.Join(o.Repo.Dir, o.Module))
	if err != nil {
		return nil, err
	}
	gosum, err := seedGoSum(ctx, o.Repo, o.Modules)
	if err != nil {
		return nil, err
	}
	if err := writeConsumer(modDir, candidate, o.Version, res.CandidateGoMod, importable, gosum); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "./..."},
		{"build", candidate + "/..."},
	} {
		fmt.Fprintf(o.Log, "   go %s\n", strings.Join(args, " "))
		if out, err := goCmd(ctx, modDir, env, args...); err != nil {
			return res, fmt.Errorf("%w\n%s", err, tail(out))
		}
	}

	out, err := goCmd(ctx, modDir, env, "list", "-m", "-f", "{{.Path}} {{.Version}} {{if .Replace}}replaced{{end}}", "all")
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, tail(out))
	}
	isOurs := map[string]bool{}
	for _, p := range ours {
		isOurs[p] = true
	}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 || !isOurs[f[0]] {
			continue
		}
		if len(f) > 2 {
			return res, fmt.Errorf("%s is replaced in the consumer's build list", f[0])
		}
		res.Resolved[f[0]] = f[1]
	}
	if res.Resolved[candidate] != o.Version {
		return res, fmt.Errorf("the consumer resolved %s %q, want %s", candidate, res.Resolved[candidate], o.Version)
	}
	paths := make([]string, 0, len(res.Resolved))
	for p := range res.Resolved {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(o.Log, "   resolved %s %s from the local proxy\n", p, res.Resolved[p])
	}
	return res, nil
}

// consumerEnv isolates the consumer from the repository: no workspace, a fresh module cache, the
// local proxy first, then the machine's module cache (a valid GOPROXY folder too), then the
// configured proxy for everything else.
func consumerEnv(proxyDir, cacheDir string) []string {
	upstream := os.Getenv("GOPROXY")
	if upstream == "" {
		upstream = "https://proxy.golang.org,direct"
	}
	proxies := []string{goproxy.URL(proxyDir)}
	if cache := goEnv("GOMODCACHE"); cache != "" {
		proxies = append(proxies, goproxy.URL(filepath.Join(cache, "cache", "download")))
	}
	proxies = append(proxies, upstream)
	return []string{
		"GOWORK=off",
		"GOMODCACHE=" + cacheDir,
		"GOPROXY=" + strings.Join(proxies, ","),
		// -trimpath keeps the build cache shared with ordinary builds despite the fresh module cache.
		"GOFLAGS=-mod=mod -trimpath",
		"GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
	}
}

func goEnv(name string) string {
	out, err := goCmd(context.Background(), ".", nil, "env", name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// importablePackages lists the packages of the module in dir that another module can import:
// neither commands nor internal nor made of test files only.
func importablePackages(ctx context.Context, dir string) ([]string, error) {
	// A package with only test files (examples, for instance) cannot be imported either.
	out, err := goCmd(ctx, dir, nil, "list", "-f", "{{if and (ne .Name \"main\") .GoFiles}}{{.ImportPath}}{{end}}", "./...")
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tail(out))
	}
	var pkgs []string
	for _, p := range strings.Fields(out) {
		if !strings.Contains("/"+p+"/", "/internal/") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

// seedGoSum collects the go.sum lines of the repository's modules at HEAD: the consumer needs the
// same third-party modules, and their checksums then need no checksum-database lookup.
func seedGoSum(ctx context.Context, repo *gitrepo.Repo, modules []string) ([]byte, error) {
	var sum bytes.Buffer
	for _, m := range modules {
		data, err := repo.Show(ctx, "HEAD", m+"/go.sum")
		if err != nil {
			continue // a module without dependencies has no go.sum
		}
		sum.Write(data)
	}
	return sum.Bytes(), nil
}

func writeConsumer(dir, candidate, version string, candidateGoMod []byte, importable []string, gosum []byte) error {
	goVersion := "1.26.0"
	if f, err := modfile.ParseLax("go.mod", candidateGoMod, nil); err == nil && f.Go != nil {
		goVersion = f.Go.Version
	}
	var src strings.Builder
	src.WriteString("// Package consumer imports every importable package of " + candidate + " " + version + ".\npackage consumer\n")
	if len(importable) > 0 {
		src.WriteString("\nimport (\n")
		for _, p := range importable {
			fmt.Fprintf(&src, "\t_ %q\n", p)
		}
		src.WriteString(")\n")
	}
	files := map[string]string{
		"go.mod":      fmt.Sprintf("module consumer.test/release\n\ngo %s\n\nrequire %s %s\n", goVersion, candidate, version),
		"go.sum":      string(gosum),
		"consumer.go": src.String(),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func runConsumer(ctx context.Context, s *state) error {
	_, err := Consumer(ctx, ConsumerOptions{
		Repo: s.Repo, Module: s.Module, Version: s.Version, Modules: s.Manifest.Names(), Log: s.Log,
	})
	return err
}
