package machinedeployment

import (
	"testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestSetSelector(t *testing.T) {
	md := &v1beta1.MachineDeployment{Spec: v1beta1.MachineDeploymentSpec{Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}}
	sel := setSelector(md, "md-abc")
	if sel.MatchLabels[v1beta1.SetNameLabel] != "md-abc" || sel.MatchLabels["pool"] != "a" || md.Spec.Selector.MatchLabels[v1beta1.SetNameLabel] != "" {
		t.Fatalf("selector %+v (deployment's %+v)", sel, md.Spec.Selector)
	}
	full := map[string]string{}
	for i := range 16 {
		full[string(rune('a'+i))] = "x"
	}
	md.Spec.Selector.MatchLabels = full
	sel = setSelector(md, "md-abc")
	if len(sel.MatchLabels) != 16 || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Values[0] != "md-abc" {
		t.Fatalf("with 16 matchLabels the set-name goes to matchExpressions: %+v", sel)
	}
}
