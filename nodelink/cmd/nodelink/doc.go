/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
