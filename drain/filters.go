package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubectldrain "k8s.io/kubectl/pkg/drain"
)

// kubectlView is what kubectl's drain filters (Helper.GetPodsForDeletion) decided about a node's
// pods. This package never decides itself which pods a drain leaves alone: it asks kubectl and
// only reads back kubectl's own messages to say why.
type kubectlView struct {
	// deletable are the pods kubectl would evict.
	deletable map[types.NamespacedName]corev1.Pod
	// warnings maps a pod to kubectl's warning about it (for a pod it leaves alone, the reason).
	warnings map[types.NamespacedName]string
	// refusals maps a pod to kubectl's reason for refusing to drain it (for example emptyDir data
	// without DeleteEmptyDirData).
	refusals map[types.NamespacedName]string
}

// newHelper returns the kubectl drain helper a step uses, bound to the step's context.
//
// Force and IgnoreAllDaemonSets are always on: pods that no controller recreates are evicted
// (the node is going away, they would be lost anyway), and DaemonSet pods are left alone (their
// controller would put them straight back). Skip-labelled pods are hidden from kubectl by the pod
// selector, so its filters never refuse them. SkipWaitForDeleteTimeoutSeconds stays 0: kubectl
// reads the wall clock for it, so this package decides about terminating pods with its own clock.
func newHelper(ctx context.Context, client kubernetes.Interface, o Options, keep string, gracePeriodSeconds *int64) *kubectldrain.Helper {
	grace := -1 // kubectl: negative means each pod's own terminationGracePeriodSeconds
	if gracePeriodSeconds != nil {
		grace = int(*gracePeriodSeconds)
	}
	return &kubectldrain.Helper{
		Ctx:                 ctx,
		Client:              client,
		Force:               true,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  o.DeleteEmptyDirData,
		GracePeriodSeconds:  grace,
		PodSelector:         keep,
		Out:                 io.Discard,
		ErrOut:              io.Discard,
	}
}

// viewThroughKubectl runs kubectl's filters over the pods of node.
func viewThroughKubectl(h *kubectldrain.Helper, node string) (*kubectlView, error) {
	list, errs := h.GetPodsForDeletion(node)
	if list == nil {
		// kubectl returns no list only when it could not list the pods at all.
		return nil, fmt.Errorf("listing the pods of node %s: %w", node, errors.Join(errs...))
	}
	view := &kubectlView{
		deletable: map[types.NamespacedName]corev1.Pod{},
		warnings:  parseKubectlWarnings(list.Warnings()),
		refusals:  parseKubectlRefusals(errs),
	}
	for _, pod := range list.Pods() {
		view.deletable[keyOf(&pod)] = pod
	}
	return view, nil
}

// parseKubectlWarnings reads PodDeleteList.Warnings(), "<message>: ns/a, ns/b; <message>: ns/c",
// into a map from pod to message. Pod names and namespaces are DNS names, so neither ": " nor ", "
// occurs in them: the pod list is what follows the last ": " of each part.
func parseKubectlWarnings(warnings string) map[types.NamespacedName]string {
	out := map[types.NamespacedName]string{}
	if warnings == "" {
		return out
	}
	for part := range strings.SplitSeq(warnings, "; ") {
		message, pods, ok := cutLast(part, ": ")
		if !ok {
			continue
		}
		for _, pod := range parsePodList(pods) {
			out[pod] = message
		}
	}
	return out
}

// parseKubectlRefusals reads the per-pod errors of GetPodsForDeletion, each
// "cannot delete <message>: ns/a, ns/b", into a map from pod to a reason that names this package's
// options instead of kubectl's flags.
func parseKubectlRefusals(errs []error) map[types.NamespacedName]string {
	out := map[types.NamespacedName]string{}
	for _, err := range errs {
		message, pods, ok := cutLast(err.Error(), ": ")
		if !ok {
			continue
		}
		message = strings.TrimPrefix(message, "cannot delete ")
		message = kubectlFlagsToOptions.Replace(message)
		for _, pod := range parsePodList(pods) {
			out[pod] = message
		}
	}
	return out
}

// kubectlFlagsToOptions rewrites the kubectl flags its refusals suggest into this package's options.
var kubectlFlagsToOptions = strings.NewReplacer(
	"use --delete-emptydir-data to override", "set Options.DeleteEmptyDirData to evict it and lose that data",
	"--delete-emptydir-data", "Options.DeleteEmptyDirData",
)

func parsePodList(s string) []types.NamespacedName {
	var out []types.NamespacedName
	for item := range strings.SplitSeq(s, ", ") {
		ns, name, ok := strings.Cut(item, "/")
		if !ok || ns == "" || name == "" {
			continue
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: name})
	}
	return out
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
