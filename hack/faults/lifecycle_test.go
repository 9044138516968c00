package faults_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 11: instance lifecycle safety. An instance whose Machine is gone (its finalizer removed
// by hand) is found and deleted by the manager's orphan collector, after the grace period and
// never while the API server cannot say which Machines exist; a template that never boots is
// replaced after the set's launch timeout without a health check, a bounded number of times. The
// invariants ("no instance without its Machine", "nothing lost") hold through the collector: the
// harness deletes no instance.
var _ = Describe("Scenario 11: orphan instances and Machines that never launch", func() {
	const grace = 30 * time.Second
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("lifecycle")
		s.Start(s.MachineManager(fmt.Sprintf("--orphan-grace-period=%s", grace), "--orphan-interval=2s"))
	})
	AfterEach(func() { s.Verify() })

	It("collects the instance of a Machine whose finalizer was removed by hand after the grace period, nothing else, and nothing while the API server is down", func() {
		md := faults.MachineDeployment(s.NS, "pool", 3)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		running := s.WaitRunning("pool", 3, 2*time.Minute)
		victim := running[0]

		By("someone deletes a Machine and removes its finalizer by hand: its instance stays, an orphan")
		// Paused first, so that the machine controller does not begin deleting the instance
		// between the delete and the finalizer's removal.
		Annotate(&victim, map[string]*string{v1beta1.PausedAnnotation: ptr.To("")})
		Expect(k8s.Delete(ctx, &victim)).To(Succeed())
		Expect(k8s.Patch(ctx, &victim, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&victim), &v1beta1.Machine{}))
		}).Should(BeTrue())
		gone := time.Now()
		Expect(instanceOf(s, victim.UID)).To(BeTrue(), "the instance outlives its Machine")

		Eventually(orphanEvents(s)).WithTimeout(grace/2).Should(ContainElement(And(
			ContainSubstring(victim.Spec.ProviderID), ContainSubstring("no longer exists"))), "reported when first seen, well within the grace period")
		logf("orphan %s reported %s after its Machine went", victim.Spec.ProviderID, time.Since(gone).Round(time.Millisecond))

		By("the API server goes down before the grace period ends and stays down well past it: nothing is deleted")
		plane.KillAPIServer()
		time.Sleep(grace + 10*time.Second)
		Expect(instanceOf(s, victim.UID)).To(BeTrue(), "an outage never makes an instance an orphan")
		insts, err := faults.ReadInstances(s.SimDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(insts).To(HaveLen(4), "the three Machines' instances (the set replaced the victim) and the orphan")
		Expect(logOf(s.Managers[0])).To(ContainSubstring("orphan collection frozen"))
		startAPIServerAgain()

		By("once the Machines can be read again, the orphan goes, and only it")
		Eventually(func() bool { return instanceOf(s, victim.UID) }).WithTimeout(time.Minute).Should(BeFalse())
		logf("orphan deleted %s after its Machine went", time.Since(gone).Round(time.Second))
		Eventually(orphanEvents(s)).Should(ContainElement(ContainSubstring("deleted instance " + victim.Spec.ProviderID)))
		s.WaitRunning("pool", 3, 2*time.Minute)
		// Verify: every Machine has its instance, no instance is without its Machine, no Node
		// without its instance (the collector deleted the orphan's Node with it).
	})

	It("replaces a Machine whose instance the cloud announces it will reclaim before it goes: the replacement Running before the old Machine's deletion starts", func() {
		md := faults.MachineDeployment(s.NS, "spot", 2)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		running := s.WaitRunning("spot", 2, 2*time.Minute)
		victim := running[0]
		at := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Second)
		Annotate(&victim, map[string]*string{"sim.machineapi.dev/reclaim-at": ptr.To(at.Format(time.RFC3339)), "sim.machineapi.dev/reclaim-notice": ptr.To("10m")})

		var heir, old faults.MachineRecord
		Expect(tracker.WaitFor(ctx, 2*time.Minute, func() bool {
			for _, r := range tracker.Machines(s.NS) {
				switch {
				case r.UID == victim.UID:
					old = r
				case r.Last != nil && r.Last.Annotations[v1beta1.ReplacesAnnotation] == victim.Name:
					heir = r
				}
			}
			return !old.Deleting.IsZero()
		})).To(Succeed(), "the announced Machine is deleted")
		Expect(heir.Name).NotTo(BeEmpty(), "a replacement names it")
		Expect(heir.Running).NotTo(BeZero(), "the replacement is Running")
		Expect(heir.Running).To(BeTemporally("<", old.Deleting), "the replacement was Running before the old Machine's deletion started")
		Expect(old.Deleting).To(BeTemporally("<", at), "and that was before the reclaim")
		Expect(old.AtDeletion.Status.Interruption).To(HaveField("Reason", "SpotReclaim"))
		s.WaitRunning("spot", 2, 2*time.Minute)
	})

	It("replaces a Machine that never boots after the set's launch timeout, without a health check, at most maxRetries times", func() {
		set := faults.MachineSet(s.NS, "never", 1)
		set.Spec.Template.Metadata.Annotations = map[string]string{"sim.machineapi.dev/never-boot": ""}
		set.Spec.MachineLaunch = &v1beta1.MachineLaunch{TimeoutSeconds: 10, MaxRetries: ptr.To[int32](2)}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		s.Expect.NotReadySets["never"] = true

		Eventually(func() string { return setCondition(set, v1beta1.MachinesProvisionedCondition) }).WithTimeout(2 * time.Minute).
			Should(HavePrefix("False/LaunchRetriesExhausted"))
		Consistently(func() int { return len(tracker.Machines(s.NS)) }, "25s").Should(Equal(3),
			"the first Machine and two replacements, then no more (two more timeouts pass)")
		live, _ := tracker.Live(s.NS)
		Expect(live).To(Equal(1), "the last one is kept for inspection")
		got := &v1beta1.MachineSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
		var notes []string
		for _, e := range tracker.EventsFor(got.UID) {
			if e.Reason == "LaunchTimedOut" {
				notes = append(notes, e.Note)
			}
		}
		for _, r := range tracker.Machines(s.NS) {
			if r.Deleting.IsZero() {
				continue
			}
			Expect(notes).To(ContainElement(HavePrefix("Machine "+r.Name+" did not reach Running within 10s")), "a Warning on the set names each Machine replaced")
		}
	})
})

// instanceOf reports whether the scenario's sim has an instance for the Machine with uid.
func instanceOf(s *Scenario, uid types.UID) bool {
	GinkgoHelper()
	insts, err := faults.ReadInstances(s.SimDir)
	Expect(err).NotTo(HaveOccurred())
	_, ok := insts[uid]
	return ok
}

// orphanEvents returns the notes of the OrphanInstance events in the scenario's namespace.
func orphanEvents(s *Scenario) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(s.NS))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Reason == "OrphanInstance" {
				out = append(out, e.Note)
			}
		}
		return out
	}
}

// logOf returns a component's current log.
func logOf(c *faults.Component) string {
	data, err := os.ReadFile(c.CurrentLog())
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// setCondition returns "status/reason: message" of a MachineSet condition.
func setCondition(set *v1beta1.MachineSet, t string) string {
	got := &v1beta1.MachineSet{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(set), got); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(got.Status.Conditions, t)
	if c == nil {
		return "<none>"
	}
	return strings.Join([]string{string(c.Status), c.Reason + ": " + c.Message}, "/")
}
