// Package kubeconfig reads a Cluster's workload-cluster kubeconfig from the Secret its
// spec.kubeconfigSecretRef names. The cluster controller (to run the remote node linker) and the
// remote drain controller (to drain Nodes there) read it the same way, with get only: the Secret
// is never listed, watched or cached.
//
// Read returns a Problem, not an error, for what the user must fix (a missing Secret or key, a
// kubeconfig client-go cannot use); an error is a transient failure to read the Secret.
package kubeconfig
