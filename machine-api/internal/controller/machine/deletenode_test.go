package machine

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestDeleteNodeGivesUpAfterTheTimeout injects a Node deletion that keeps failing: deletion must
// retry, then go on once nodeDeletionTimeoutSeconds has passed since the first attempt.
func TestDeleteNodeGivesUpAfterTheTimeout(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"}}
	c := fake.NewClientBuilder().WithObjects(node).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return errors.New("admission webhook denied the request (injected)")
		},
	}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}

	tests := map[string]struct {
		timeout   *int32
		startedAt *time.Time // status.deletion.nodeDeletionStartTime
		done      bool
	}{
		"first failure: retry and record when deletion started": {done: false},
		"still within the default 10s":                          {startedAt: ptr.To(now.Add(-5 * time.Second)), done: false},
		"past the default 10s: give up and go on":               {startedAt: ptr.To(now.Add(-11 * time.Second)), done: true},
		"past a custom timeout":                                 {timeout: ptr.To[int32](2), startedAt: ptr.To(now.Add(-3 * time.Second)), done: true},
		"0 retries forever":                                     {timeout: ptr.To[int32](0), startedAt: ptr.To(now.Add(-time.Hour)), done: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
			m.Spec.Deletion = &v1beta1.MachineDeletionSpec{NodeDeletionTimeoutSeconds: tc.timeout}
			if tc.startedAt != nil {
				m.Status.Deletion = &v1beta1.MachineDeletionStatus{NodeDeletionStartTime: ptr.To(metav1.NewTime(*tc.startedAt))}
			}
			s := &scope{machine: m, node: node, now: now, deletion: &deletionState{}}
			_, done, err := r.deleteNode(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if done != tc.done {
				t.Fatalf("done = %v, want %v (step %s: %s)", done, tc.done, s.deletion.step, s.deletion.message)
			}
			if !done && s.deletion.step != ReasonDeletingNode {
				t.Errorf("waiting step = %q, want %s", s.deletion.step, ReasonDeletingNode)
			}
			if tc.startedAt == nil && (s.nodeDelStart == nil || !s.nodeDelStart.Equal(now)) {
				t.Errorf("the start of node deletion was not recorded")
			}
		})
	}
}
