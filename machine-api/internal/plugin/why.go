package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func newWhyCommand(e *env) *cobra.Command {
	var events int
	cmd := &cobra.Command{
		Use:   "why MACHINE",
		Short: "Explain a Machine on one screen: phase, Node, owners, conditions, health check verdict, recent events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return why(cmd.Context(), e, args[0], events)
		},
	}
	cmd.Flags().IntVar(&events, "events", 10, "how many recent events to show")
	return cmd
}

func why(ctx context.Context, e *env, name string, maxEvents int) error {
	m := &v1beta1.Machine{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: e.namespace, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("machine %s/%s not found (use -n to pick its namespace)", e.namespace, name)
		}
		return err
	}
	w := e.streams.Out
	now := time.Now()
	phase := string(m.Status.Phase)
	if phase == "" {
		phase = "Pending"
	}
	fmt.Fprintf(w, "Machine %s/%s: %s", m.Namespace, m.Name, phase)
	if !m.DeletionTimestamp.IsZero() {
		fmt.Fprintf(w, ", deleting for %s", duration.HumanDuration(now.Sub(m.DeletionTimestamp.Time)))
	}
	fmt.Fprintf(w, " (age %s)\n", duration.HumanDuration(now.Sub(m.CreationTimestamp.Time)))
	if m.Status.FailureReason != nil {
		fmt.Fprintf(w, "Failed: %s: %s\n", *m.Status.FailureReason, deref(m.Status.FailureMessage))
	}
	if by := v1beta1.PausedBy(m.Annotations); by != "" {
		fmt.Fprintf(w, "Paused: the %s annotation is set; controllers leave the machine alone\n", by)
	}
	if v, ok := m.Annotations[v1beta1.DoNotDisruptAnnotation]; ok {
		fmt.Fprintf(w, "Do not disrupt: the %s annotation (%q) keeps its set from deleting it for a scale-down, rollout, expiry or remediation\n",
			v1beta1.DoNotDisruptAnnotation, v)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition); c != nil && c.Status == metav1.ConditionFalse && m.DeletionTimestamp.IsZero() {
		fmt.Fprintf(w, "Held: its set would delete it, but %s (%s, for %s)\n", c.Message, c.Reason, duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)))
	}
	fmt.Fprintf(w, "Provider ID: %s\n", orNone(m.Spec.ProviderID))
	fmt.Fprintf(w, "Node: %s\n", nodeSummary(ctx, e, m))
	fmt.Fprintf(w, "Owner: %s\n", ownerChain(ctx, e, m))
	fmt.Fprintf(w, "Health check: %s\n", healthVerdict(ctx, e, m))

	fmt.Fprintln(w, "\nConditions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	conds := append([]metav1.Condition(nil), m.Status.Conditions...)
	sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	for _, c := range conds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), c.Message)
	}
	_ = tw.Flush()

	return printEvents(ctx, e, w, m, maxEvents, now)
}

func nodeSummary(ctx context.Context, e *env, m *v1beta1.Machine) string {
	if m.Status.NodeRef == nil {
		msg := "not linked yet"
		if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition); c != nil {
			msg = "not linked: " + c.Message
		}
		if n := gatedNode(ctx, e, m.Spec.ProviderID); n != "" {
			msg += fmt.Sprintf("; Node %s registered with this providerID and waits for the link, tainted %s: no pod lands on it until the Machine's labels and taints are applied",
				n, v1beta1.NodeUninitializedTaintKey)
		}
		return msg
	}
	node := &corev1.Node{}
	if err := e.client.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return m.Status.NodeRef.Name + " (gone: the Node no longer exists)"
		}
		return fmt.Sprintf("%s (could not read it: %v)", m.Status.NodeRef.Name, err)
	}
	parts := []string{}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			parts = append(parts, "Ready="+string(c.Status))
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				parts = append(parts, c.Message)
			}
		}
	}
	if node.Spec.Unschedulable {
		parts = append(parts, "cordoned")
	}
	if gated(node) {
		parts = append(parts, fmt.Sprintf("linked, still tainted %s: waiting for the Machine's labels and taints to be applied (see the events below); no pod lands on it until then",
			v1beta1.NodeUninitializedTaintKey))
	}
	return fmt.Sprintf("%s (%s)", node.Name, strings.Join(parts, ", "))
}

// gated reports whether n still carries the initialization taint.
func gated(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1beta1.NodeUninitializedTaintKey })
}

// gatedNode returns the name of a Node with providerID that still carries the initialization
// taint, "" when there is none (or providerID is empty, or the Nodes cannot be listed). It lists
// the Nodes: the API server has no field selector on spec.providerID, and why is asked about one
// Machine at a time.
func gatedNode(ctx context.Context, e *env, providerID string) string {
	if providerID == "" {
		return ""
	}
	nodes := &corev1.NodeList{}
	if err := e.client.List(ctx, nodes); err != nil {
		return ""
	}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; n.Spec.ProviderID == providerID && gated(n) {
			return n.Name
		}
	}
	return ""
}

func ownerChain(ctx context.Context, e *env, m *v1beta1.Machine) string {
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.Kind != "MachineSet" {
		return "none (a standalone Machine: nothing replaces it if it is deleted)"
	}
	out := "MachineSet " + ref.Name
	ms := &v1beta1.MachineSet{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, ms); err == nil {
		if md := metav1.GetControllerOf(ms); md != nil && md.Kind == "MachineDeployment" {
			out += ", of MachineDeployment " + md.Name
		}
		if rev := ms.Annotations[v1beta1.RevisionAnnotation]; rev != "" {
			out += " (revision " + rev + ")"
		}
	}
	return out
}

func healthVerdict(ctx context.Context, e *env, m *v1beta1.Machine) string {
	checks := &v1beta1.MachineHealthCheckList{}
	var names []string
	if err := e.client.List(ctx, checks, client.InNamespace(m.Namespace)); err == nil {
		for i := range checks.Items {
			sel, err := metav1.LabelSelectorAsSelector(checks.Items[i].Spec.Selector.AsLabelSelector())
			if err == nil && sel.Matches(labels.Set(m.Labels)) {
				names = append(names, checks.Items[i].Name)
			}
		}
	}
	if len(names) == 0 {
		return "no MachineHealthCheck selects this machine"
	}
	verdict := "not evaluated yet"
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition); c != nil {
		verdict = fmt.Sprintf("%s=%s (%s) %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return fmt.Sprintf("%s: %s", strings.Join(names, ", "), verdict)
}

func printEvents(ctx context.Context, e *env, w io.Writer, m *v1beta1.Machine, max int, now time.Time) error {
	list, err := e.clientset.CoreV1().Events(m.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.uid": string(m.UID)}.String(),
	})
	if err != nil {
		return fmt.Errorf("listing the machine's events: %w", err)
	}
	evs := list.Items
	sort.Slice(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	if len(evs) > max {
		evs = evs[len(evs)-max:]
	}
	fmt.Fprintln(w, "\nRecent events:")
	if len(evs) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range evs {
		fmt.Fprintf(tw, "  %s ago\t%s\t%s\t%s\n", duration.HumanDuration(now.Sub(eventTime(ev))), ev.Type, ev.Reason, ev.Message)
	}
	return tw.Flush()
}

func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	default:
		return ev.CreationTimestamp.Time
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}
