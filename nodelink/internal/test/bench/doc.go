// Package bench measures how fast nodelink links pre-created Node/Machine pairs on a real
// kube-apiserver, next to the raw write rate of the same API server measured in the same run.
// It holds only a benchmark, so `go test ./...` runs nothing here; run it with
//
//	KUBEBUILDER_ASSETS=$PWD/../bin/k8s/1.37.2 go test -run '^$' -bench . -benchtime 1x ./internal/test/bench/
//
// NODELINK_BENCH_N (comma-separated, default "1000,5000") chooses the sizes and
// NODELINK_BENCH_WORKERS (default nodelink's default) the linker's concurrency.
package bench
