#!/usr/bin/env bash
# Prints the Prometheus release hack/prometheus/go.mod pins: module github.com/prometheus/prometheus
# v0.MNN.P is Prometheus M.NN.P.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
awk '$1 == "require" && $2 == "github.com/prometheus/prometheus" { v = $3 }
  $1 == "github.com/prometheus/prometheus" && v == "" { v = $2 }
  END {
    if (v !~ /^v0\.[0-9][0-9][0-9]\.[0-9]+$/) { print "hack/prometheus/go.mod must require github.com/prometheus/prometheus v0.MNN.P" > "/dev/stderr"; exit 1 }
    split(substr(v, 4), p, "."); printf "%d.%d.%s\n", substr(p[1], 1, 1), substr(p[1], 2), p[2]
  }' "$here/go.mod"
