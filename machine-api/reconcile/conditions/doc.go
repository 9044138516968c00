// Package conditions sets metav1.Conditions in a status the same way in every controller of
// machine-api and cluster-api, with time from the reconcile's clock (scope.now, read once from the
// controller's injected clock.Clock), never from the wall clock: a test that steps a fake clock
// sees the transition times it stepped to. It is exported so that cluster-api's controllers set
// their conditions with it rather than with copies.
//
// Set keeps a condition's lastTransitionTime unless its status changes, and reports whether
// anything a reader sees changed (so a controller writes nothing when nothing did); Restart is for
// the one condition whose lastTransitionTime means something else (a MachineDeployment's
// Progressing: the time of the last progress). ApplyConfigurations and ApplyConfiguration turn the
// conditions a controller owns into what it sends by server-side apply, so that it owns exactly
// those condition types (see package write).
package conditions
