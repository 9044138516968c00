package manager

import (
	"flag"
	"io"
	"testing"
	"time"
)

// The cluster-manager's command line: defaults survive, flags land in the right fields, and a
// bad rate is refused.
func TestAddFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		check   func(Options) bool
		wantErr bool
	}{
		"defaults": {check: func(o Options) bool {
			return o.QPS == 50 && o.KubeconfigPollInterval == time.Minute && o.LeaderElectionID == "cluster-manager.cluster.machineapi.dev"
		}},
		"flags set the options": {
			args: []string{"--namespace=team-a", "--leader-elect", "--kube-api-qps=20", "--kube-api-burst=30",
				"--workload-api-qps=5", "--kubeconfig-poll-interval=30s", "--metrics-bind-address=0"},
			check: func(o Options) bool {
				return o.Namespace == "team-a" && o.LeaderElection && o.QPS == 20 && o.Burst == 30 && o.WorkloadQPS == 5 &&
					o.KubeconfigPollInterval == 30*time.Second && o.MetricsBindAddress == "0"
			},
		},
		"a rate must be positive": {args: []string{"--kube-api-qps=0"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			fs := flag.NewFlagSet("cluster-manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.AddFlags(fs)
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}
