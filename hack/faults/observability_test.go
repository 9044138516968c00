package faults_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// The observability scenario: a real Prometheus (built from source by make prometheus) scrapes
// machine-manager and cluster-manager, as an operator's would scrape make run's, and evaluates
// both modules' alert rules. Those rules are rendered for a test that cannot wait an hour (every
// `for` shortened to 2s, the age thresholds to any age: faults.RenderRules); promtool unit-tests
// them with their real durations (make test).
var _ = Describe("Observability: a real Prometheus scraping both managers", Label("observability"), func() {
	var (
		s    *Scenario
		prom *faults.Prometheus
	)

	BeforeEach(func() {
		Expect(*promDir).NotTo(BeEmpty(), "-prometheus-bin-dir (or PROMETHEUS_BIN_DIR) is not set: run make test-faults, or make prometheus and pass it")
		s = NewScenario("observability")
		mm := s.MachineManager()
		s.Start(mm)
		cm := &faults.Component{Name: "cluster-manager", Binary: binaries["cluster-manager"], LogDir: filepath.Join(s.Dir, "logs"),
			Args: []string{"--kubeconfig=" + plane.Kubeconfig, "--namespace=" + s.NS}}
		s.Others = append(s.Others, cm)
		Expect(cm.Start()).To(Succeed())
		Expect(cm.WaitServing(ctx, time.Minute)).To(Succeed())

		dir := filepath.Join(s.Dir, "prometheus")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		var rules, aged []string
		for _, m := range []string{"machine-api", "cluster-api"} {
			dst := filepath.Join(dir, m+"-alerts.yaml")
			a, err := faults.RenderRules(filepath.Join(*rootDir, m, "config", "prometheus", "alerts.yaml"), dst, 2*time.Second)
			Expect(err).NotTo(HaveOccurred())
			rules, aged = append(rules, dst), append(aged, a...)
		}
		Expect(aged).To(ContainElement("MachineDrainBlocked"), "the drain alert's age threshold is rendered for the test")
		var err error
		prom, err = faults.StartPrometheus(ctx, faults.PrometheusOptions{
			Binary: filepath.Join(*promDir, "prometheus"), Dir: dir, RuleFiles: rules, Interval: time.Second,
			Targets: map[string]string{"machine-manager": mm.MetricsAddress(), "cluster-manager": cm.MetricsAddress()},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(prom.Stop)
		GinkgoWriter.Printf("prometheus on its own port, log %s\n", prom.Log())
	})
	AfterEach(func() { s.Verify() })

	It("scrapes both managers, fires MachineDrainBlocked while a PodDisruptionBudget blocks a deletion, and resolves it once the budget is relaxed", func() {
		By("Prometheus scrapes machine-manager and cluster-manager")
		Eventually(prom.TargetsUp).WithContext(ctx).Should(Equal([]string{"cluster-manager", "machine-manager"}))
		Eventually(series(prom, `machineapi_nodelink_links_total{job="cluster-manager"}`)).Should(HaveLen(1),
			"cluster-manager's own metrics (its workload node linkers' counters) are scraped")

		md := faults.MachineDeployment(s.NS, "web", 2)
		md.Spec.Template.Spec.Metadata.Labels[faults.PoolLabel] = s.NS
		Expect(k8s.Create(ctx, md)).To(Succeed())
		s.WaitRunning("web", 2, 2*time.Minute)
		Eventually(series(prom, `machineapi_machines{namespace="`+s.NS+`",phase="Running"} == 2`)).Should(HaveLen(1),
			"the Machines' phases, from machine-manager's cache")

		By("pods of a Deployment on both Nodes under a budget that allows no disruption")
		Expect(k8s.Create(ctx, webDeployment(s.NS, 2))).To(Succeed())
		Eventually(readyPodsByNode(s.NS)).Should(HaveLen(2))
		pdb := webBudget(s.NS)
		Expect(k8s.Create(ctx, pdb)).To(Succeed())
		Eventually(BudgetAllows(pdb, 0)).Should(Succeed())

		Expect(firing(prom, s.NS)(Default)).To(BeEmpty(), "nothing to alert about yet")

		By("deleting a Machine: its drain is blocked by the budget, and the alert fires naming the namespace and the reason")
		victim := s.RunningMachines("web")[0]
		Expect(k8s.Delete(ctx, &victim)).To(Succeed())
		Eventually(deletingMessage(victim)).Should(ContainSubstring("blocked by PodDisruptionBudget " + s.NS + "/web"))
		Eventually(firing(prom, s.NS)).WithTimeout(time.Minute).Should(ContainElement(
			"MachineDrainBlocked reason=PodDisruptionBudget"))
		Eventually(series(prom, `machineapi_drains_blocked{namespace="`+s.NS+`",reason="PodDisruptionBudget"} == 1`)).Should(HaveLen(1))
		Eventually(series(prom, `machineapi_machine_deletions{namespace="`+s.NS+`",step="DrainingNode"} == 1`)).Should(HaveLen(1))

		By("every query of the Grafana dashboard runs on the real Prometheus")
		for _, q := range dashboardQueries(s.NS) {
			_, err := prom.Query(ctx, q)
			Expect(err).NotTo(HaveOccurred(), "dashboard query %s", q)
		}

		By("relaxing the budget: the drain completes, the Machine goes, and the alert resolves")
		Expect(k8s.Patch(ctx, pdb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":1}}`)))).To(Succeed())
		Eventually(Gone(&v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: victim.Name}})).WithTimeout(time.Minute).Should(BeTrue())
		Eventually(firing(prom, s.NS)).WithTimeout(time.Minute).ShouldNot(ContainElement(HavePrefix("MachineDrainBlocked")))
		Eventually(series(prom, `machineapi_drains_blocked{namespace="`+s.NS+`"}`)).Should(BeEmpty())
		Eventually(series(prom, `machineapi_machine_drain_duration_seconds_count{outcome="drained"} >= 1`)).Should(HaveLen(1),
			"the finished drain is observed")
		s.WaitRunning("web", 2, 2*time.Minute)
		Eventually(readyPodsByNode(s.NS)).WithTimeout(2 * time.Minute).Should(HaveLen(2))
		Expect(k8s.Delete(ctx, pdb)).To(Succeed())
	})
})

// series returns the series expr evaluates to now in prom (failing on a query error).
func series(prom *faults.Prometheus, expr string) func(Gomega) []faults.Sample {
	return func(g Gomega) []faults.Sample {
		got, err := prom.Query(ctx, expr)
		g.Expect(err).NotTo(HaveOccurred())
		return got
	}
}

// firing returns the alerts prom fires about namespace ns, as "Name reason=R" (or "Name").
func firing(prom *faults.Prometheus, ns string) func(Gomega) []string {
	return func(g Gomega) []string {
		alerts, err := prom.Alerts(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, a := range alerts {
			if a.State != "firing" || a.Labels["namespace"] != ns {
				continue
			}
			name := a.Name
			if r := a.Labels["reason"]; r != "" {
				name += " reason=" + r
			}
			out = append(out, name)
		}
		return out
	}
}

// dashboardQueries returns every query of the Grafana dashboard, its variables set as Grafana
// would for namespace ns.
func dashboardQueries(ns string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(*rootDir, "machine-api", "config", "grafana", "dashboard.json"))
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(data, &d)).To(Succeed())
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1s", "$__range", "1h", "$namespace", ns)
	var out []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			out = append(out, vars.Replace(t.Expr))
		}
	}
	Expect(out).NotTo(BeEmpty())
	return out
}
