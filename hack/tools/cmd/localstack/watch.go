package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var machinesGVR = schema.GroupVersionResource{Group: "machine.machineapi.dev", Version: "v1beta1", Resource: "machines"}

// watchMachines polls the machines every two seconds and sends a rendered table whenever it
// changes. It stops polling (closing the channel) when the Machine CRD is not installed.
func watchMachines(ctx context.Context, dyn dynamic.Interface) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		last, announced := "", false
		for {
			list, err := dyn.Resource(machinesGVR).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			switch {
			case err != nil && strings.Contains(err.Error(), "the server could not find the requested resource"):
				return
			case err == nil:
				table, allRunning := renderMachines(list.Items)
				if table != last {
					last = table
					stamp := time.Now().Format("15:04:05")
					select {
					case out <- fmt.Sprintf("--- machines at %s ---\n%s", stamp, table):
					case <-ctx.Done():
						return
					}
				}
				if allRunning && !announced && len(list.Items) > 0 {
					announced = true
					select {
					case out <- fmt.Sprintf("all %d machines are Running (still watching; Ctrl-C stops everything)\n", len(list.Items)):
					case <-ctx.Done():
						return
					}
				}
				if !allRunning {
					announced = false
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	return out
}

func renderMachines(items []unstructured.Unstructured) (string, bool) {
	sort.Slice(items, func(i, j int) bool {
		return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tPHASE\tNODE\tREADY")
	allRunning := true
	for _, m := range items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		ready := "False"
		conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
		for _, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["type"] == "Ready" {
				ready, _ = cm["status"].(string)
			}
		}
		if phase != "Running" {
			allRunning = false
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.GetNamespace(), m.GetName(), orDash(phase), orDash(node), ready)
	}
	_ = w.Flush()
	if len(items) == 0 {
		return "(no machines yet)\n", false
	}
	return b.String(), allRunning
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
