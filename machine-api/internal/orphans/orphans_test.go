package orphans_test

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientevents "k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/orphans"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/provider"
)

// brokenReader answers every read with an error, as an unreachable API server does.
type brokenReader struct{ client.Reader }

func (brokenReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

// brokenLister fails to list.
type brokenLister struct{ provider.Lister }

func (brokenLister) List(context.Context) ([]provider.Instance, error) {
	return nil, errors.New("the cloud's API is down")
}

var _ = Describe("The orphan collector", func() {
	var (
		ns      string
		clock   *testclock.FakeClock
		c       *orphans.Collector
		orphan  *v1beta1.Machine
		node    string
		events  *clientevents.FakeRecorder
		listing = func() []string {
			insts, err := st.Sim.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, i := range insts {
				if i.MachineNamespace == ns {
					out = append(out, i.MachineName)
				}
			}
			return out
		}
	)
	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "orphans-"}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		ns = n.Name
		clock = testclock.NewFakeClock(time.Now())
		events = clientevents.NewFakeRecorder(100)
		opts := orphans.DefaultOptions()
		opts.Grace = time.Hour
		c = &orphans.Collector{Lister: st.Sim, APIReader: k8s, Recorder: events, Clock: clock, Log: logr.Discard(), Options: opts}

		keep := builder.Machine(ns, "keep").Build()
		orphan = builder.Machine(ns, "orphan").Build()
		for _, m := range []*v1beta1.Machine{keep, orphan} {
			Expect(k8s.Create(ctx, m)).To(Succeed())
		}
		Eventually(func() *v1beta1.NodeReference {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)
			return orphan.Status.NodeRef
		}).ShouldNot(BeNil())
		node = orphan.Status.NodeRef.Name
		Eventually(listing).Should(ConsistOf("keep", "orphan"))

		By("someone removes the Machine's finalizer by hand and deletes it: its instance stays")
		// Paused first, so the machine controller does not start deleting the instance between the
		// delete and the finalizer's removal (a race whose outcome this spec does not test).
		Expect(k8s.Patch(ctx, orphan, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":""}}}`)))).To(Succeed())
		Expect(k8s.Delete(ctx, orphan)).To(Succeed())
		Eventually(func() error {
			cur := &v1beta1.Machine{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(orphan), cur); err != nil {
				return err
			}
			cur.Finalizers = nil
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(orphan), &v1beta1.Machine{}))
		}).Should(BeTrue())
		Expect(listing()).To(ConsistOf("keep", "orphan"))
		// The sim made the instances by its real clock, a moment ago; the collector's fake clock
		// starts now, so that the instances' age and the time they have been orphans are the same.
		clock.SetTime(time.Now())

		// Each spec leaves no orphan behind for the next one's passes.
		DeferCleanup(func() {
			insts, err := st.Sim.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			for _, i := range insts {
				if i.MachineNamespace == ns && i.MachineName == "orphan" {
					Expect(st.Sim.DeleteInstance(ctx, i)).To(Succeed())
				}
			}
		})
	})

	It("reports an orphan when it first sees it, deletes it and its Node once the grace period has passed, and nothing else", func() {
		out := c.Pass(ctx)
		Expect(out.Skipped).To(BeEmpty())
		Expect(out.New).To(ConsistOf(HaveField("MachineName", "orphan")))
		Expect(out.Delete).To(BeEmpty(), "not before the grace period")
		Expect(events.Events).To(Receive(And(ContainSubstring("Warning OrphanInstance"), ContainSubstring("sim:///"+string(orphan.UID)))))

		clock.Step(time.Hour - time.Second)
		Expect(c.Pass(ctx).Delete).To(BeEmpty(), "a second short of the grace period")
		Expect(listing()).To(ConsistOf("keep", "orphan"))

		clock.Step(time.Second)
		Expect(c.Pass(ctx).Delete).To(ConsistOf(HaveField("MachineName", "orphan")))
		Expect(listing()).To(ConsistOf("keep"), "the orphan's instance is gone, the other stays")
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})) }).Should(BeTrue(),
			"and its Node with it")
	})

	It("deletes nothing while the Machines cannot be read from the API server, nor when the provider cannot list", func() {
		c.Pass(ctx)
		clock.Step(2 * time.Hour)
		c.APIReader = brokenReader{}
		Expect(c.Pass(ctx).Skipped).To(Equal("frozen"))
		Expect(listing()).To(ConsistOf("keep", "orphan"), "a blip never looks like every instance being an orphan")

		c.APIReader, c.Lister = k8s, brokenLister{}
		Expect(c.Pass(ctx).Skipped).To(Equal("list_failed"))
		Expect(listing()).To(ConsistOf("keep", "orphan"))
	})

	It("only reports with the report policy", func() {
		c.Options.Policy = orphans.PolicyReport
		c.Pass(ctx)
		clock.Step(2 * time.Hour)
		out := c.Pass(ctx)
		Expect(out.Orphans).To(ConsistOf(HaveField("MachineName", "orphan")))
		Expect(out.Delete).To(BeEmpty())
		Expect(listing()).To(ConsistOf("keep", "orphan"))
	})
})
