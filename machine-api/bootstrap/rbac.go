package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRoleBindings are what a cluster needs for machines to join with bootstrap tokens, as
// config/bootstrap/cluster-role-bindings.yaml holds them (a test keeps the two equal):
//
//   - machineapi:kubelet-bootstrap: TokenGroup may create and read CertificateSigningRequests
//     (system:node-bootstrapper);
//   - machineapi:node-autoapprove-bootstrap: kube-controller-manager's csrapproving controller
//     approves TokenGroup's requests for node client certificates;
//   - machineapi:node-autoapprove-certificate-rotation: it approves a Node's request to renew its
//     own client certificate (system:nodes).
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bind := func(name, group, role string) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
	}
	return []rbacv1.ClusterRoleBinding{
		bind("machineapi:kubelet-bootstrap", TokenGroup, "system:node-bootstrapper"),
		bind("machineapi:node-autoapprove-bootstrap", TokenGroup, "system:certificates.k8s.io:certificatesigningrequests:nodeclient"),
		bind("machineapi:node-autoapprove-certificate-rotation", "system:nodes", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"),
	}
}
