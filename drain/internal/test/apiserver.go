package test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// CreateNode creates node and then writes its status, which a create ignores.
func CreateNode(ctx context.Context, c kubernetes.Interface, node *corev1.Node) (*corev1.Node, error) {
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil || len(node.Status.Conditions) == 0 {
		return created, err
	}
	created.Status = node.Status
	return c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
}

// SetNodeReady writes the node's Ready condition, as the kubelet (True) or the node controller
// (Unknown, when the kubelet stops reporting) would.
func SetNodeReady(ctx context.Context, c kubernetes.Interface, name string, status corev1.ConditionStatus) error {
	node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test"}}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// CreatePod creates pod and then writes its status (phase, conditions), which a create ignores.
// The owner's UID is kept as given: no garbage collector runs in envtest to notice the owner is
// missing.
func CreatePod(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	in := pod.DeepCopy()
	in.UID = ""
	created, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, in, metav1.CreateOptions{})
	if err != nil || pod.Status.Phase == "" {
		return created, err
	}
	created.Status = pod.Status
	return c.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
}

// CreateNamespace creates a namespace.
func CreateNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// CreatePDB creates budget (its spec; the status is the disruption controller's).
func CreatePDB(ctx context.Context, c kubernetes.Interface, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	in := pdb.DeepCopy()
	in.Generation = 0
	in.Status = policyv1.PodDisruptionBudgetStatus{}
	return c.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(ctx, in, metav1.CreateOptions{})
}

// BudgetAllows reports whether the disruption controller has observed the budget's current
// generation and computed disruptionsAllowed == allowed; for gomega's Eventually.
func BudgetAllows(ctx context.Context, c kubernetes.Interface, key types.NamespacedName, allowed int32) func() error {
	return func() error {
		pdb, err := c.PolicyV1().PodDisruptionBudgets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.DisruptionsAllowed != allowed {
			return fmt.Errorf("PodDisruptionBudget %s: observedGeneration %d of generation %d, disruptionsAllowed %d (want %d), currentHealthy %d, desiredHealthy %d",
				key, pdb.Status.ObservedGeneration, pdb.Generation, pdb.Status.DisruptionsAllowed, allowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)
		}
		return nil
	}
}

// RemoveFinalizers clears a pod's finalizers so that a terminating pod can go.
func RemoveFinalizers(ctx context.Context, c kubernetes.Interface, key types.NamespacedName) error {
	_, err := c.CoreV1().Pods(key.Namespace).Patch(ctx, key.Name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Kubelet stands in for the kubelet of one node, which envtest does not run: without it an evicted
// pod stays terminating forever.
type Kubelet struct {
	Client kubernetes.Interface
	Node   string
}

// FinishTerminatingPods does what a kubelet does once a terminating pod's containers have stopped:
// it deletes the pod with grace period 0. Pods held by a finalizer stay until it is removed. It
// returns how many pods it deleted.
func (k Kubelet) FinishTerminatingPods(ctx context.Context) (int, error) {
	pods, err := k.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", k.Node).String(),
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil || len(pod.Finalizers) > 0 {
			continue
		}
		err := k.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return n, err
		}
		n++
	}
	return n, nil
}
