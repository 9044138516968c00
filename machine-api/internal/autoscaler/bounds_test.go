package autoscaler

import (
	"testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestBounds(t *testing.T) {
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	minA, maxA := v1beta1.AutoscalerMinSizeAnnotation, v1beta1.AutoscalerMaxSizeAnnotation
	cases := map[string]struct {
		annotations map[string]string
		replicas    int32
		want        string // reason, "" for no condition
	}{
		"no annotations, no condition": {annotations: nil, replicas: 3},
		"within":                       {annotations: ann(minA, "1", maxA, "5"), replicas: 3, want: ReasonWithinAutoscalerBounds},
		"at the edges":                 {annotations: ann(minA, "3", maxA, "3"), replicas: 3, want: ReasonWithinAutoscalerBounds},
		"below min":                    {annotations: ann(minA, "2", maxA, "5"), replicas: 1, want: ReasonBelowMinSize},
		"above max":                    {annotations: ann(minA, "0", maxA, "5"), replicas: 6, want: ReasonAboveMaxSize},
		"only max":                     {annotations: ann(maxA, "2"), replicas: 3, want: ReasonAboveMaxSize},
		"only min":                     {annotations: ann(minA, "2"), replicas: 30, want: ReasonWithinAutoscalerBounds},
		"not a number":                 {annotations: ann(minA, "one"), replicas: 3, want: ReasonInvalidBounds},
		"negative":                     {annotations: ann(maxA, "-1"), replicas: 3, want: ReasonInvalidBounds},
		"min above max":                {annotations: ann(minA, "5", maxA, "2"), replicas: 3, want: ReasonInvalidBounds},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := Bounds(tc.annotations, tc.replicas, 1)
			if !ok {
				if tc.want != "" {
					t.Fatalf("no condition, want %s", tc.want)
				}
				return
			}
			if c.Type != v1beta1.AutoscalerBoundsCondition || c.Reason != tc.want {
				t.Fatalf("reason %s (%s), want %s", c.Reason, c.Message, tc.want)
			}
		})
	}
}
