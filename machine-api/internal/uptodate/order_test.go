package uptodate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestSortForReplacement(t *testing.T) {
	m := func(name string, provisioned time.Duration, marked, available bool) *v1beta1.Machine {
		out := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if provisioned != 0 {
			out.Status.ProvisionedTime = ptr.To(metav1.NewTime(t0.Add(provisioned)))
		}
		if marked {
			out.Annotations = map[string]string{v1beta1.DeleteMachineAnnotation: "x"}
		}
		if !available {
			out.Labels = map[string]string{"unavailable": ""}
		}
		return out
	}
	machines := []*v1beta1.Machine{
		m("young", -time.Minute, false, true),
		m("old", -time.Hour, false, true),
		m("older-b", -2*time.Hour, false, true),
		m("older-a", -2*time.Hour, false, true),
		m("broken", -time.Minute, false, false),
		m("marked", -time.Minute, true, true),
		m("no-instance", 0, false, true),
	}
	SortForReplacement(machines, func(m *v1beta1.Machine) bool { _, u := m.Labels["unavailable"]; return !u })
	var names []string
	for _, m := range machines {
		names = append(names, m.Name)
	}
	want := "marked broken older-a older-b old young no-instance"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}
