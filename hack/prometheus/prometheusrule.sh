#!/usr/bin/env bash
# Renders a module's Prometheus rule file (config/prometheus/alerts.yaml) as the PrometheusRule
# the Prometheus Operator reads (same groups, under spec), for `make generate`:
#   prometheusrule.sh <alerts.yaml> <component> > prometheusrule.yaml
# <component> is the manager (machine-manager, cluster-manager): the object's name and
# app.kubernetes.io/name label. The rule file's leading comment is not copied.
set -euo pipefail
rules=$1 component=$2
cat <<HEAD
# Generated from alerts.yaml by \`make generate\` (hack/prometheus/prometheusrule.sh): edit alerts.yaml.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: $component
  namespace: machineapi-system
  labels:
    app.kubernetes.io/name: $component
    app.kubernetes.io/part-of: machineapi
spec:
HEAD
awk 'body || !/^#/ { body = 1; print ($0 == "" ? "" : "  " $0) }' "$rules"
