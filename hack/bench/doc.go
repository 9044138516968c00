// Command bench is make bench: the scale benchmark of machineapi on the source-built control plane.
//
// Each run starts a fresh etcd + kube-apiserver and measures, in one go:
//
//  1. the raw write floor: Node creates plus status updates with an unthrottled client at high
//     concurrency (writes/s), the yardstick for everything else, measured afresh because these
//     machines are noisy;
//  2. scale-up: the real machine-manager (simulated provider, no boot delay) scales a
//     MachineDeployment from 0 to N (1000; 5000 with BENCH_FULL=1) until every Machine is Running
//     with a nodeRef and a Ready Node: machines/s, API writes per machine (from the API server's
//     apiserver_request_total), the ratio to the floor, p50/p99 time-to-Running, the manager's
//     peak RSS;
//  3. scale-down from N to 0 with drain (the Nodes are empty);
//  4. nodelink alone: N pre-created Node/Machine pairs linked by the nodelink binary;
//  5. health checks: with N machines under one MachineHealthCheck, the time from a Node going
//     NotReady to the start of its remediation, beyond the configured timeout;
//  6. with -compare-rounds (3 with BENCH_FULL=1): rounds of a 0 -> 1000 and a 0 -> N scale-up,
//     each on its own fresh control plane, the order swapped every round, for the throughput of
//     N against 1000 as a median and a spread (one pair of runs moves by a quarter here).
//
// It prints a markdown table and writes the figures as JSON (-out). docs/performance.md explains
// each figure.
package main
