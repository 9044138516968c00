// Package prometheus pins the Prometheus server and promtool that build.sh compiles into
// bin/prometheus/<version>/ (tools.go), and tests the observability files against them: every
// module's alert rules pass `promtool check rules` and their unit tests (`promtool test rules`),
// and every PromQL query of the alert rules and of the Grafana dashboard names only metrics that
// docs/operations.md lists (machine-api's and cluster-api's own tests check that list against
// what the managers register).
package prometheus
