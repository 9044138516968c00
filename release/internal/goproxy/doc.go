// Package goproxy writes a GOPROXY folder (the layout the go command reads from a file:// URL)
// holding module versions cut from this repository's git history: for each one the module zip
// (made with golang.org/x/mod/zip from git archive, so it holds exactly what a real proxy would
// serve), its go.mod and its .info. Consumers of a vanity path like machineapi.dev/drain, which
// has no server behind it, resolve it through such a folder.
package goproxy
