// Package scrape reads what a Prometheus collector (or a registry) exports, as a test asserts on
// it: the value of each series of one metric, keyed by its labels.
package scrape
