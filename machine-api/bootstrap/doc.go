// Package bootstrap joins a machine's kubelet to the cluster the way clusters do it: with a
// bootstrap token per Machine, and a client certificate the kubelet asks for with a
// CertificateSigningRequest that kube-controller-manager approves and signs. Providers use it to
// write their instances' bootstrap data; it knows nothing of any provider.
//
// What it owns:
//
//   - EnsureToken mints a Machine's bootstrap token — a Secret bootstrap-token-<id> of type
//     bootstrap.kubernetes.io/token in kube-system, usable for authentication only, adding the
//     group system:bootstrappers:machineapi (TokenGroup), with an expiration, labelled with the
//     Machine's UID (MachineUIDLabel) — or finds the one an earlier call minted, so a provider's
//     repeated Create reuses it. A token that has expired or will within half its lifetime is
//     replaced. RevokeTokens deletes every token of a Machine; deleting none succeeds.
//   - Kubeconfig renders the bootstrap kubeconfig a kubelet starts with (--bootstrap-kubeconfig).
//   - CAData reads the cluster CA a kubelet must trust from a client configuration.
//   - ClusterRoleBindings are the three bindings a cluster needs for this flow (the same objects
//     as config/bootstrap/cluster-role-bindings.yaml): the token's group may create CSRs
//     (system:node-bootstrapper) whose node client certificates are approved automatically
//     (certificatesigningrequests:nodeclient), and Nodes' own renewals are approved too
//     (system:nodes → certificatesigningrequests:selfnodeclient).
//
// What the cluster must run: kube-apiserver with --enable-bootstrap-token-auth and the Node
// authorizer (--authorization-mode=Node,RBAC: it lets a Node create the CSRs that renew its
// certificate, and read what its kubelet needs); kube-controller-manager with the csrapproving
// and csrsigning controllers (both on by default) and --cluster-signing-cert-file and
// --cluster-signing-key-file naming a CA that kube-apiserver's --client-ca-file trusts;
// optionally its tokencleaner controller, which deletes expired tokens. The manager needs get,
// list, create and delete on Secrets in kube-system
// (config/bootstrap/token-role.yaml).
//
// The functions take a controller-runtime client. Give them one that reads from the API server
// (not a manager's cache): a cached client would make the manager watch every Secret of the
// cluster.
//
// Start reading at EnsureToken in token.go.
package bootstrap
