// Package apicompat compares the exported API of two versions of a Go module with
// golang.org/x/exp/apidiff and classifies the result as a [versions.Change].
//
// A module's API is every package it holds that is neither a command (package main) nor under an
// internal/ folder. Both sides are type-checked from source with golang.org/x/tools/go/packages,
// with GOWORK=off so that each side builds with its own go.mod. apidiff's report is read, not its
// exit status (its command exits 0 even when it finds incompatible changes).
package apicompat
