package machine

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/drain"
	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
)

// scope is what one reconcile learned. Steps fill it in; computeStatus turns it into status.
type scope struct {
	machine *v1beta1.Machine // as read; steps never change its status directly
	class   *v1beta1.MachineClass
	now     time.Time

	// Create path.
	classMissing      string            // why the MachineClass could not be used
	startProvisioning bool              // the Machine moves to Provisioning now, before Create
	observed          *v1beta1.Machine  // the provider's view after Create/Update (providerID, addresses, providerStatus)
	providerErr       error             // a transient provider failure, reported in InstanceProvisioned
	providerWait      string            // a provider's RequeueAfter reason
	failure           *failure          // a terminal failure found in this reconcile
	upToDate          *metav1.Condition // the UpToDate condition decided by this reconcile
	desired           uptodate.Desired  // what the Machine should be (upToDate)
	inPlace           *inPlaceState     // the in-place update decided by this reconcile (inplace.go)

	interruption *interruptionState // the announced end of the instance (interruption.go)

	// Link (link.go).
	recordsLink bool           // this controller records the Machine's link for the node linker
	link        *nodelink.Link // the link to record, decided by this reconcile; nil: keep the recorded one

	// Node.
	node        *corev1.Node
	nodeMissing bool // status.nodeRef names a Node that does not exist
	// nodeElsewhere: status.nodeRef names a Node this manager cannot see, but the node linker that
	// can (cluster-manager, for a workload cluster) reports it linked.
	nodeElsewhere bool

	// Delete path.
	deletion         *deletionState
	drainStart       *time.Time
	volumeStart      *time.Time
	nodeDelStart     *time.Time
	finalizerRemoved bool
}

type failure struct {
	reason  v1beta1.MachineFailureReason
	message string
}

// deletionState says where the delete pipeline stopped.
type deletionState struct {
	step    string // a Deleting condition reason
	message string
	drain   *drainState
}

// drainState is the outcome of the drain step, for the Drained condition and
// status.deletion.drainBlockedBy.
type drainState struct {
	done      bool
	reason    string
	message   string
	result    *drain.Result
	blockedBy []string // what holds the drain (sorted, distinct); nil when nothing does
}
