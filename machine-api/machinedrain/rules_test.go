package machinedrain_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"
)

// TestRules protects which MachineDrainRules apply to a Machine's drain, and how they read as the
// drain policy's rules.
func TestRules(t *testing.T) {
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-1", Labels: map[string]string{"pool": "db"}}}
	rule := func(ns, name string, edit func(*v1beta1.MachineDrainRuleSpec)) v1beta1.MachineDrainRule {
		r := v1beta1.MachineDrainRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1beta1.MachineDrainRuleSpec{Drain: v1beta1.MachineDrainRuleDrain{Behavior: v1beta1.DrainBehaviorSkip}}}
		if edit != nil {
			edit(&r.Spec)
		}
		return r
	}
	pool := func(p string) func(*v1beta1.MachineDrainRuleSpec) {
		return func(s *v1beta1.MachineDrainRuleSpec) {
			s.Machines = []v1beta1.MachineDrainRuleMachines{{Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": p}}}}
		}
	}
	tests := map[string]struct {
		rules []v1beta1.MachineDrainRule
		want  []string
		err   string
	}{
		"no machines: the rule applies to every Machine of its namespace": {
			rules: []v1beta1.MachineDrainRule{rule("ns", "all", nil)},
			want:  []string{"MachineDrainRule ns/all Skip 0 pods=[]"},
		},
		"a rule of another namespace never applies": {
			rules: []v1beta1.MachineDrainRule{rule("other", "all", nil)},
		},
		"machines select by the Machine's labels; any entry is enough": {
			rules: []v1beta1.MachineDrainRule{
				rule("ns", "web-pool", pool("web")),
				rule("ns", "db-pool", pool("db")),
				rule("ns", "either", func(s *v1beta1.MachineDrainRuleSpec) {
					pool("web")(s)
					s.Machines = append(s.Machines, v1beta1.MachineDrainRuleMachines{Selector: v1beta1.LabelSelector{
						MatchExpressions: []v1beta1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpExists}}}})
				}),
			},
			want: []string{"MachineDrainRule ns/db-pool Skip 0 pods=[]", "MachineDrainRule ns/either Skip 0 pods=[]"},
		},
		"behavior, order and pod selectors carry over, sorted by name": {
			rules: []v1beta1.MachineDrainRule{
				rule("ns", "z-jobs", func(s *v1beta1.MachineDrainRuleSpec) { s.Drain.Behavior = v1beta1.DrainBehaviorWaitCompleted }),
				rule("ns", "a-db", func(s *v1beta1.MachineDrainRuleSpec) {
					s.Drain = v1beta1.MachineDrainRuleDrain{Behavior: v1beta1.DrainBehaviorDrain, Order: ptr.To[int32](10)}
					s.Pods = []v1beta1.MachineDrainRulePods{{
						Selector:          v1beta1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
						NamespaceSelector: &v1beta1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
					}}
				}),
			},
			want: []string{"MachineDrainRule ns/a-db Drain 10 pods=[app=db in tier=prod]", "MachineDrainRule ns/z-jobs WaitCompleted 0 pods=[]"},
		},
		"a selector that does not parse is an error naming the rule and the field": {
			rules: []v1beta1.MachineDrainRule{rule("ns", "typo", func(s *v1beta1.MachineDrainRuleSpec) {
				s.Pods = []v1beta1.MachineDrainRulePods{{Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"app": "not a value!"}}}}
			})},
			err: "MachineDrainRule ns/typo: spec.pods[0].selector is not a valid label selector",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := machinedrain.Rules(m, tc.rules)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, r := range got {
				lines = append(lines, describeRule(r))
			}
			if fmt.Sprint(lines) != fmt.Sprint(tc.want) {
				t.Errorf("rules\n got %q\nwant %q", lines, tc.want)
			}
		})
	}
}

func describeRule(r drain.PodRule) string {
	var pods []string
	for _, p := range r.Pods {
		s := p.Labels.String()
		if p.Namespaces != nil {
			s += " in " + p.Namespaces.String()
		}
		pods = append(pods, s)
	}
	return fmt.Sprintf("%s %s %d pods=[%s]", r.Name, r.Behavior, r.Order, strings.Join(pods, ", "))
}

// TestSkipVolumeWait protects the annotation that lets a Machine skip the volume wait.
func TestSkipVolumeWait(t *testing.T) {
	m := &v1beta1.Machine{}
	if got := machinedrain.SkipVolumeWait(m); got != "" {
		t.Errorf("without the annotation: %q, want no skip", got)
	}
	m.Annotations = map[string]string{v1beta1.ExcludeWaitForNodeVolumeDetachAnnotation: ""}
	if got := machinedrain.SkipVolumeWait(m); got != "volume wait skipped: the machine has the machine.machineapi.dev/exclude-wait-for-node-volume-detach annotation" {
		t.Errorf("with the annotation: %q", got)
	}
}
