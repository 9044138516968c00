package v1beta1

import "testing"

func TestPausedBy(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"no annotations":    {want: ""},
		"other annotations": {annotations: map[string]string{DeleteMachineAnnotation: ""}, want: ""},
		"ours, any value":   {annotations: map[string]string{PausedAnnotation: "false"}, want: PausedAnnotation},
		"Cluster API's, which the autoscaler honours": {annotations: map[string]string{ClusterAPIPausedAnnotation: ""}, want: ClusterAPIPausedAnnotation},
		"both: ours is named":                         {annotations: map[string]string{ClusterAPIPausedAnnotation: "", PausedAnnotation: ""}, want: PausedAnnotation},
		"a look-alike key does not pause":             {annotations: map[string]string{"cluster.x-k8s.io/paused-by": ""}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PausedBy(tc.annotations); got != tc.want {
				t.Fatalf("PausedBy = %q, want %q", got, tc.want)
			}
			if got := IsPaused(tc.annotations); got != (tc.want != "") {
				t.Fatalf("IsPaused = %v, want %v", got, tc.want != "")
			}
		})
	}
}
