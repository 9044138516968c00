package nodelink

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The node linker's decisions, counted when a machine's NodeLinked condition takes the reason
// (once per change, not per reconcile), in the controller-runtime metrics registry that a
// manager serves. Every linker of a process (cluster-manager runs one per workload cluster) adds
// to the same series; no label names a machine or a Node.
var (
	linksTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machineapi_nodelink_links_total",
		Help: "Machines linked to their Node (NodeLinked turned True/Linked, or re-linked to a Node that re-registered).",
	})
	conflictsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machineapi_nodelink_conflicts_total",
		Help: "Links refused because more than one candidate matched, by reason: MultipleNodesMatch, MultipleMachinesMatch, NodeLinkedToOtherMachine.",
	}, []string{"reason"})
	ipReuseRefusalsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machineapi_nodelink_ip_reuse_refusals_total",
		Help: "InternalIP matches refused by the IP-reuse guard (IPMatchRefused): the Node is older than the machine or linked to another machine.",
	})
)

func init() {
	metrics.Registry.MustRegister(linksTotal, conflictsTotal, ipReuseRefusalsTotal)
}

// observeDecision counts d when it changes a machine's NodeLinked reason from prevReason.
func observeDecision(d decision, prevReason string) {
	if d.Reason == prevReason && !d.Relinked {
		return
	}
	switch d.Reason {
	case ReasonLinked:
		linksTotal.Inc()
	case ReasonMultipleNodesMatch, ReasonMultipleMachinesMatch, ReasonNodeLinkedToOtherMachine:
		conflictsTotal.WithLabelValues(d.Reason).Inc()
	case ReasonIPMatchRefused:
		ipReuseRefusalsTotal.Inc()
	}
}
