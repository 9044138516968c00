package sim

// Fault knobs: annotations on a Machine that change how the simulated provider treats it.
const (
	knobPrefix = "sim.machineapi.dev/"

	// FailCreateAnnotation makes Create fail with an invalid configuration whose message is the
	// annotation's value.
	FailCreateAnnotation = knobPrefix + "fail-create"

	// BootDelayAnnotation overrides Options.BootDelay for this machine (a Go duration, "30s").
	BootDelayAnnotation = knobPrefix + "boot-delay"

	// RebootDurationAnnotation overrides Options.RebootDuration for this machine (a Go duration;
	// "0s": the instance is back at once). Read when an in-place update starts its reboot.
	RebootDurationAnnotation = knobPrefix + "reboot-duration"

	// NeverBootAnnotation: the instance is created but its Node never registers.
	NeverBootAnnotation = knobPrefix + "never-boot"

	// NotReadyAfterAnnotation makes the Node go NotReady (Ready=False) this long after it booted
	// ("0s" right away). Read when the Machine is reconciled; removing it makes the Node Ready again.
	NotReadyAfterAnnotation = knobPrefix + "not-ready-after"

	// UnreachableAnnotation makes the Node unreachable (Ready=Unknown, pods never finish terminating).
	UnreachableAnnotation = knobPrefix + "unreachable"

	// VanishAnnotation makes the instance disappear, as if deleted behind the controller's back.
	VanishAnnotation = knobPrefix + "vanish"

	// ReclaimAtAnnotation makes the simulated cloud reclaim the instance at this time (RFC 3339),
	// as a spot instance is: the provider announces it (provider.InterruptionNotifier, reason
	// SpotReclaim) from ReclaimNoticeAnnotation before, and at the time the instance vanishes.
	ReclaimAtAnnotation = knobPrefix + "reclaim-at"

	// ReclaimNoticeAnnotation is how long before ReclaimAtAnnotation the reclaim is announced (a Go
	// duration; default 2m, as spot reclaims are).
	ReclaimNoticeAnnotation = knobPrefix + "reclaim-notice"

	// InternalIPAnnotation gives the instance this InternalIP instead of an allocated one.
	InternalIPAnnotation = knobPrefix + "internal-ip"

	// InstanceLabel on a Node names the sim instance (the Machine UID) it belongs to.
	InstanceLabel = knobPrefix + "instance"
)
