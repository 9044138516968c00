package write

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
)

func TestRequeueOnConflict(t *testing.T) {
	gr := schema.GroupResource{Group: "machine.machineapi.dev", Resource: "machines"}
	conflict := apierrors.NewConflict(gr, "m", errors.New("the object has been modified"))
	other := apierrors.NewInternalError(errors.New("etcd"))
	requeued := ctrl.Result{RequeueAfter: ConflictRetry}
	waiting := ctrl.Result{RequeueAfter: time.Minute}
	tests := map[string]struct {
		err     error
		want    ctrl.Result
		wantErr bool
	}{
		"no error":                        {err: nil, want: waiting},
		"a conflict":                      {err: conflict, want: requeued},
		"a wrapped conflict":              {err: fmt.Errorf("removing the finalizer of machine ns/m: %w", conflict), want: requeued},
		"joined conflicts":                {err: errors.Join(conflict, fmt.Errorf("scaling: %w", conflict)), want: requeued},
		"a conflict joined with another":  {err: errors.Join(conflict, other), wantErr: true},
		"a wrapped join hiding another":   {err: fmt.Errorf("x: %w", errors.Join(conflict, other)), wantErr: true},
		"another API error":               {err: other, wantErr: true},
		"a plain error":                   {err: errors.New("boom"), wantErr: true},
		"a terminal error is no conflict": {err: reconcile.TerminalError(errors.New("bad spec")), wantErr: true},
		"not found is no conflict":        {err: apierrors.NewNotFound(gr, "m"), wantErr: true},
		"an empty join is no conflict":    {err: errors.Join(nil, nil), want: waiting},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := RequeueOnConflict(waiting, tc.err)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if res != tc.want {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
		})
	}
}

// TestWholeStatus: what a controller that owns the whole status applies is the whole status, field
// for field; zero counters are sent (0 shows), an empty list is not.
func TestWholeStatus(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC))
	full := v1beta1.MachineHealthCheckStatus{
		ExpectedMachines: 3, CurrentHealthy: 2, RemediationsAllowed: 0, Targets: []string{"m1", "m2", "m3"},
		ObservedGeneration: 4,
		Conditions: []metav1.Condition{{Type: v1beta1.RemediationAllowedCondition, Status: metav1.ConditionTrue, Reason: "Allowed",
			Message: "2 of 3 healthy", ObservedGeneration: 4, LastTransitionTime: at}},
	}
	ac, err := WholeStatus[acv1beta1.MachineHealthCheckStatusApplyConfiguration](full)
	if err != nil {
		t.Fatal(err)
	}
	if ac.RemediationsAllowed == nil || *ac.RemediationsAllowed != 0 {
		t.Errorf("remediationsAllowed 0 is not sent: %v", ac.RemediationsAllowed)
	}
	if len(ac.Targets) != 3 || len(ac.Conditions) != 1 || *ac.Conditions[0].Message != "2 of 3 healthy" || !ac.Conditions[0].LastTransitionTime.Equal(&at) {
		t.Errorf("apply configuration %+v does not hold the status's lists", ac)
	}
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	var sent v1beta1.MachineHealthCheckStatus
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(sent, full) {
		t.Errorf("applied status\n%+v\nwant\n%+v", sent, full)
	}

	empty, err := WholeStatus[acv1beta1.MachineHealthCheckStatusApplyConfiguration](v1beta1.MachineHealthCheckStatus{})
	if err != nil {
		t.Fatal(err)
	}
	if empty.ExpectedMachines == nil || empty.Targets != nil || empty.Conditions != nil {
		t.Errorf("an empty status applies %+v: want the counters (0) and no lists", empty)
	}
}

func TestAddFinalizer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const finalizer = "machine.machineapi.dev/test"
	tests := map[string]struct {
		has        []string
		want       []string
		wantWrites int
	}{
		"added, others kept":        {has: []string{"other"}, want: []string{"other", finalizer}, wantWrites: 1},
		"present already: no write": {has: []string{finalizer}, want: []string{finalizer}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stored := &v1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Finalizers: tc.has}}
			writes := 0
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					writes++
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			set := &v1beta1.MachineSet{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), set); err != nil {
				t.Fatal(err)
			}
			if err := AddFinalizer(context.Background(), c, set, finalizer); err != nil {
				t.Fatal(err)
			}
			got := &v1beta1.MachineSet{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.want) || writes != tc.wantWrites {
				t.Errorf("stored finalizers %v after %d writes, want %v after %d", got.Finalizers, writes, tc.want, tc.wantWrites)
			}
		})
	}

	t.Run("a stale copy is a conflict, not an overwrite", func(t *testing.T) {
		stored := &v1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).Build()
		stale := &v1beta1.MachineSet{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), stale); err != nil {
			t.Fatal(err)
		}
		fresh := stale.DeepCopy()
		fresh.Labels = map[string]string{"edited": "yes"}
		if err := c.Update(context.Background(), fresh); err != nil {
			t.Fatal(err)
		}
		err := AddFinalizer(context.Background(), c, stale, finalizer)
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "MachineSet ns/s") {
			t.Errorf("AddFinalizer on a stale copy = %v, want a conflict naming MachineSet ns/s", err)
		}
	})
}
