// Command nodelink links the Nodes of a cluster to the machine-like objects they run on — any
// CRD, named by its GroupVersionKind and the paths of its fields — and keeps the Nodes' labels,
// annotations and taints in sync with them. Cluster API's Machines, for example:
//
//	nodelink --machine-gvk=cluster.x-k8s.io/v1beta1/Machine \
//	  --node-ref-fields=apiVersion,kind,name,uid \
//	  --labels-path=metadata.labels \
//	  --label-prefixes=node-role.kubernetes.io/,node-restriction.kubernetes.io/,node.cluster.x-k8s.io/ \
//	  --annotations-path= --taints-path=
//
// Machines are read from --kubeconfig's cluster; Nodes from --node-kubeconfig's when it is set
// (a workload cluster), otherwise from the same cluster. See package machineapi.dev/nodelink for
// what it writes and why.
package main
