package statemetrics

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// collectTimeout bounds one collection: a scrape waits for it.
const collectTimeout = 10 * time.Second

// CollectFunc computes the samples of a Collector from reader (the manager's cache) and sends them
// on ch, each made with one of the Collector's descriptors (prometheus.MustNewConstMetric).
type CollectFunc func(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error

// Collector is a prometheus.Collector whose samples a CollectFunc computes from the cache when
// Prometheus scrapes, on the elected replica only.
type Collector struct {
	reader  client.Reader
	elected <-chan struct{}
	descs   []*prometheus.Desc
	collect CollectFunc
}

// New returns a Collector of the metrics descs describe, computed by collect from reader once
// elected is closed (a manager's Elected(); nil: always).
func New(reader client.Reader, elected <-chan struct{}, collect CollectFunc, descs ...*prometheus.Desc) *Collector {
	return &Collector{reader: reader, elected: elected, descs: descs, collect: collect}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A replica that is not elected sends nothing; a failed
// read sends an invalid metric, so the scrape reports the error instead of a partial picture.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.elected != nil {
		select {
		case <-c.elected:
		default:
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	if err := c.collect(ctx, c.reader, ch); err != nil {
		ch <- prometheus.NewInvalidMetric(c.descs[0], fmt.Errorf("reading the cache: %w", err))
	}
}

// Register registers c with reg, replacing a collector of the same metrics registered before: a
// process that builds a second manager (a test) exports the state of the newest one.
func Register(reg prometheus.Registerer, c prometheus.Collector) error {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		reg.Unregister(already.ExistingCollector)
		err = reg.Register(c)
	}
	return err
}

// Since is the age, in seconds, of something that began at start, as a gauge value.
func Since(now, start time.Time) float64 {
	return max(now.Sub(start).Seconds(), 0)
}

// Metric is one metric a registry holds: its name and its label names (variable labels, sorted).
type Metric struct {
	Name   string
	Labels []string
}

// descPattern reads a prometheus.Desc as client_golang prints it; the descriptors have no
// accessors.
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// Catalog lists the metrics reg holds whose names start with prefix, sorted by name, with their
// label names. Histograms are listed by their base name (without _bucket, _sum, _count) and
// without the le label.
func Catalog(reg prometheus.Collector, prefix string) ([]Metric, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	var out []Metric
	var errs []error
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			errs = append(errs, fmt.Errorf("cannot read descriptor %s", d))
			continue
		}
		if !strings.HasPrefix(m[1], prefix) {
			continue
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		slices.Sort(labels)
		out = append(out, Metric{Name: m[1], Labels: labels})
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// Replicas are the replica counts of a set or deployment, sent as one gauge with a state label.
type Replicas struct {
	Desired, Current, Ready, Available, UpToDate int32
}

// Send sends the counts as samples of desc, whose last label is the state (desired, current,
// ready, available, up_to_date), after labels.
func (r Replicas) Send(ch chan<- prometheus.Metric, desc *prometheus.Desc, labels ...string) {
	for _, s := range []struct {
		state string
		n     int32
	}{{"desired", r.Desired}, {"current", r.Current}, {"ready", r.Ready}, {"available", r.Available}, {"up_to_date", r.UpToDate}} {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(s.n), append(labels[:len(labels):len(labels)], s.state)...)
	}
}
