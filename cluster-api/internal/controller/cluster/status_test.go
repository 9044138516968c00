package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"machineapi.dev/nodelink"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/remotelink"
)

func machine(name string, ready bool, opts ...func(*machinev1.Machine)) machinev1.Machine {
	m := machinev1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	m.Status.Conditions = []metav1.Condition{{Type: machinev1.ReadyCondition, Status: status, Reason: "r"}}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func ownedBy(kind string) func(*machinev1.Machine) {
	return func(m *machinev1.Machine) {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: machinev1.GroupVersion.String(), Kind: kind, Name: "x", UID: "x", Controller: ptr.To(true)}}
	}
}

func deleting(m *machinev1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }

// The counts a user reads with `kubectl get clusters`: what the owners want, what exists, what is Ready.
func TestCountMachines(t *testing.T) {
	md := func(replicas int32) machinev1.MachineDeployment {
		return machinev1.MachineDeployment{Spec: machinev1.MachineDeploymentSpec{Replicas: ptr.To(replicas)}}
	}
	set := func(replicas int32, underDeployment bool) machinev1.MachineSet {
		s := machinev1.MachineSet{Spec: machinev1.MachineSetSpec{Replicas: ptr.To(replicas)}}
		if underDeployment {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: machinev1.GroupVersion.String(), Kind: "MachineDeployment", Name: "d", UID: "d", Controller: ptr.To(true)}}
		}
		return s
	}
	cases := map[string]struct {
		members                 members
		desired, machines, read int32
	}{
		"no members": {},
		"deployments' replicas are desired; their machines are counted and ready ones too": {
			members: members{
				deployments: []machinev1.MachineDeployment{md(2), md(1)},
				machines:    []machinev1.Machine{machine("a", true, ownedBy("MachineSet")), machine("b", false, ownedBy("MachineSet"))},
			},
			desired: 3, machines: 2, read: 1,
		},
		"a set under a labelled deployment is not counted twice": {
			members: members{deployments: []machinev1.MachineDeployment{md(2)}, sets: []machinev1.MachineSet{set(2, true), set(4, false)}},
			desired: 6,
		},
		"a standalone machine wants itself; a deleting one is counted but neither desired nor ready": {
			members: members{machines: []machinev1.Machine{machine("a", true), machine("b", true, deleting)}},
			desired: 1, machines: 2, read: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, m, r := countMachines(&tc.members)
			if d != tc.desired || m != tc.machines || r != tc.read {
				t.Errorf("desired, machines, ready = %d, %d, %d; want %d, %d, %d", d, m, r, tc.desired, tc.machines, tc.read)
			}
		})
	}
}

// The phase and conditions a user reads, from what one reconcile observed.
func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	withPhase := func(p v1beta1.ClusterPhase) *v1beta1.Cluster {
		c := testCluster()
		c.Generation = 4
		c.Status.Phase = p
		return c
	}
	remoteCluster := func() *v1beta1.Cluster {
		c := withPhase(v1beta1.ClusterPhaseProvisioned)
		c.Spec.KubeconfigSecretRef = &v1beta1.KubeconfigSecretReference{Name: "kc", Key: "value"}
		return c
	}
	deletingCluster := func() *v1beta1.Cluster {
		c := withPhase(v1beta1.ClusterPhaseProvisioned)
		c.DeletionTimestamp = &metav1.Time{Time: now}
		return c
	}
	type cond struct {
		status metav1.ConditionStatus
		reason string
	}
	cases := map[string]struct {
		scope     scope
		wantPhase v1beta1.ClusterPhase
		want      map[string]cond // condition type → status and reason; "" reason: must be absent
		wantMsg   map[string]string
	}{
		"infrastructure being created": {
			scope:     scope{cluster: withPhase(""), infra: infraState{called: true, waiting: "creating the network"}, pools: &poolsState{waitingForInfra: true}},
			wantPhase: v1beta1.ClusterPhaseProvisioning,
			want: map[string]cond{
				v1beta1.InfrastructureReadyCondition:  {metav1.ConditionFalse, ReasonProvisioning},
				v1beta1.WorkerPoolsReadyCondition:     {metav1.ConditionFalse, ReasonWaitingForInfrastructure},
				v1beta1.DeletingCondition:             {},
				v1beta1.WorkloadAPIReachableCondition: {},
			},
			wantMsg: map[string]string{v1beta1.InfrastructureReadyCondition: "creating the network"},
		},
		"ready infrastructure, pools rendered, machines ready": {
			scope: scope{cluster: withPhase(v1beta1.ClusterPhaseProvisioning), infra: infraState{called: true, ready: true}, pools: &poolsState{rendered: 2},
				members: &members{machines: []machinev1.Machine{machine("a", true)}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want: map[string]cond{
				v1beta1.InfrastructureReadyCondition: {metav1.ConditionTrue, ReasonInfrastructureProvisioned},
				v1beta1.WorkerPoolsReadyCondition:    {metav1.ConditionTrue, ReasonPoolsReconciled},
				v1beta1.MachinesReadyCondition:       {metav1.ConditionTrue, ReasonMachinesReady},
			},
		},
		"machines not all ready": {
			scope: scope{cluster: withPhase(v1beta1.ClusterPhaseProvisioned), infra: infraState{called: true, ready: true},
				members: &members{machines: []machinev1.Machine{machine("a", true), machine("b", false)}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.MachinesReadyCondition: {metav1.ConditionFalse, ReasonWaitingForMachine}},
			wantMsg:   map[string]string{v1beta1.MachinesReadyCondition: "1 of 2 desired machines are Ready"},
		},
		"an invalid providerSpec fails the cluster and says what to fix": {
			scope:     scope{cluster: withPhase(v1beta1.ClusterPhaseProvisioning), infra: infraState{called: true, invalid: "providerSpec.network \"x\" is not a CIDR"}},
			wantPhase: v1beta1.ClusterPhaseFailed,
			want:      map[string]cond{v1beta1.InfrastructureReadyCondition: {metav1.ConditionFalse, ReasonInvalidConfiguration}},
			wantMsg:   map[string]string{v1beta1.InfrastructureReadyCondition: "is not a CIDR"},
		},
		"a transient provider error after provisioning keeps the cluster Provisioned": {
			scope:     scope{cluster: withPhase(v1beta1.ClusterPhaseProvisioned), infra: infraState{called: true, err: errors.New("cloud API timeout")}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.InfrastructureReadyCondition: {metav1.ConditionFalse, ReasonProviderError}},
			wantMsg:   map[string]string{v1beta1.InfrastructureReadyCondition: "cloud API timeout"},
		},
		"a pool whose deployment name is taken is reported": {
			scope: scope{cluster: withPhase(v1beta1.ClusterPhaseProvisioned), infra: infraState{called: true, ready: true},
				pools: &poolsState{conflicts: []string{"pool a: MachineDeployment prod-a already exists"}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkerPoolsReadyCondition: {metav1.ConditionFalse, ReasonMachineDeploymentConflict}},
			wantMsg:   map[string]string{v1beta1.WorkerPoolsReadyCondition: "prod-a already exists"},
		},
		"remote: reachable": {
			scope: scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true},
				remote: &remoteState{host: "https://w:6443", linker: &remotelink.Status{Running: true, Reachability: nodelink.Reachability{Reachable: true, LastProbe: now, Since: now}}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionTrue, ReasonReachable}},
		},
		"remote: unreachable says nothing is deleted because of it": {
			scope: scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true},
				remote: &remoteState{host: "https://w:6443", linker: &remotelink.Status{Running: true,
					Reachability: nodelink.Reachability{LastProbe: now, Since: now, Err: errors.New("connection refused")}}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionFalse, ReasonUnreachable}},
			wantMsg:   map[string]string{v1beta1.WorkloadAPIReachableCondition: "nothing is remediated or deleted"},
		},
		"remote: not probed yet": {
			scope:     scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true}, remote: &remoteState{host: "h", linker: &remotelink.Status{Running: true}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionUnknown, ReasonProbing}},
		},
		"remote: the linker stopped on its own": {
			scope: scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true},
				remote: &remoteState{host: "h", linker: &remotelink.Status{Err: errors.New("timed out waiting for cache to be synced")}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionFalse, ReasonLinkerFailed}},
		},
		"remote: a linker that stopped because the server is down reports it unreachable, not failed": {
			scope: scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true},
				remote: &remoteState{host: "h", linker: &remotelink.Status{Err: errors.New("timed out waiting for cache to be synced"),
					Reachability: nodelink.Reachability{LastProbe: now, Since: now, Err: errors.New("connection refused")}}}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionFalse, ReasonUnreachable}},
		},
		"remote: the Secret is missing": {
			scope: scope{cluster: remoteCluster(), infra: infraState{called: true, ready: true},
				remote: &remoteState{reason: ReasonKubeconfigSecretNotFound, message: "Secret ns/kc does not exist"}},
			wantPhase: v1beta1.ClusterPhaseProvisioned,
			want:      map[string]cond{v1beta1.WorkloadAPIReachableCondition: {metav1.ConditionFalse, ReasonKubeconfigSecretNotFound}},
		},
		"deleting: waiting for machines, the infrastructure condition is kept": {
			scope: scope{cluster: func() *v1beta1.Cluster {
				c := deletingCluster()
				c.Status.Conditions = []metav1.Condition{{Type: v1beta1.InfrastructureReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonInfrastructureProvisioned}}
				return c
			}(), deletion: &deletionStep{reason: ReasonDeletingMachines, message: "waiting for 2 Machine(s)"}},
			wantPhase: v1beta1.ClusterPhaseDeleting,
			want: map[string]cond{
				v1beta1.DeletingCondition:            {metav1.ConditionTrue, ReasonDeletingMachines},
				v1beta1.InfrastructureReadyCondition: {metav1.ConditionTrue, ReasonInfrastructureProvisioned},
			},
		},
		"deleting: the infrastructure is going": {
			scope: scope{cluster: deletingCluster(), infra: infraState{called: true, waiting: "deleting the network"},
				deletion: &deletionStep{reason: ReasonDeletingInfrastructure, message: "deleting the network"}},
			wantPhase: v1beta1.ClusterPhaseDeleting,
			want: map[string]cond{
				v1beta1.DeletingCondition:            {metav1.ConditionTrue, ReasonDeletingInfrastructure},
				v1beta1.InfrastructureReadyCondition: {metav1.ConditionFalse, ReasonDeletingInfrastructure},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := tc.scope
			st := computeStatus(&s)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", st.Phase, tc.wantPhase)
			}
			if st.ObservedGeneration != s.cluster.Generation {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, s.cluster.Generation)
			}
			for typ, want := range tc.want {
				got := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case want.reason == "" && got != nil:
					t.Errorf("condition %s = %+v, want none", typ, got)
				case want.reason != "" && got == nil:
					t.Errorf("condition %s missing, want %s/%s", typ, want.status, want.reason)
				case want.reason != "" && (got.Status != want.status || got.Reason != want.reason):
					t.Errorf("condition %s = %s/%s (%s), want %s/%s", typ, got.Status, got.Reason, got.Message, want.status, want.reason)
				}
			}
			for typ, sub := range tc.wantMsg {
				if got := meta.FindStatusCondition(st.Conditions, typ); got == nil || !strings.Contains(got.Message, sub) {
					t.Errorf("condition %s message = %+v, want it to contain %q", typ, got, sub)
				}
			}
			again := s
			again.cluster = s.cluster.DeepCopy()
			again.cluster.Status = st
			if st2 := computeStatus(&again); !sameJSON(st2, st) {
				t.Errorf("computing the status again from its own output changed it: %+v", st2)
			}
		})
	}
}

// The status is written by server-side apply of what statusApply sends: a field it leaves out
// would never reach the Cluster (and one the controller wrote before would be removed).
func TestStatusApplySendsTheWholeStatus(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC))
	st := v1beta1.ClusterStatus{
		Phase:           v1beta1.ClusterPhaseProvisioned,
		DesiredMachines: 3, Machines: 4, ReadyMachines: 2,
		Conditions: []metav1.Condition{
			{Type: v1beta1.InfrastructureReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonInfrastructureProvisioned, Message: "ready", ObservedGeneration: 7, LastTransitionTime: at},
			{Type: v1beta1.MachinesReadyCondition, Status: metav1.ConditionFalse, Reason: ReasonWaitingForMachine, Message: "2 of 3", ObservedGeneration: 7, LastTransitionTime: at},
		},
		ObservedGeneration: 7,
	}
	c := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "prod", UID: "uid-1"}}
	ac, err := statusApply(c, st)
	if err != nil {
		t.Fatal(err)
	}
	if *ac.Name != "prod" || *ac.Namespace != "ns" || *ac.UID != "uid-1" {
		t.Errorf("apply targets %s/%s uid %s, want ns/prod uid-1 (the UID keeps it off a re-created Cluster)", *ac.Namespace, *ac.Name, *ac.UID)
	}
	data, err := json.Marshal(ac.Status)
	if err != nil {
		t.Fatal(err)
	}
	var sent v1beta1.ClusterStatus
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(sent, st) {
		t.Errorf("statusApply sends\n%+v\nwant the whole status\n%+v", sent, st)
	}
}
