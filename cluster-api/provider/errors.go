package provider

import (
	"fmt"
	"time"

	machineprovider "machineapi.dev/machine-api/provider"
)

// The errors a cluster provider returns are machine-api's provider errors
// (machineapi.dev/machine-api/provider), under the names a cluster provider has always used: the
// types are aliases, so errors.As finds either package's error in the other's, and the functions
// give the messages their Cluster wording.

// InvalidConfigurationError says the Cluster's configuration can never work as it is: retrying
// will not help, the user must change the Cluster. The cluster controller sets phase Failed and
// InfrastructureReady=False with reason InvalidConfiguration and the error's message.
type InvalidConfigurationError = machineprovider.InvalidConfigurationError

// InvalidConfiguration returns an InvalidConfigurationError about the Cluster, with a formatted
// message that says what to change ("providerSpec.network \"10.0.0.0/33\" is not a CIDR such as
// 10.0.0.0/16"); its Error() begins "invalid cluster configuration: ".
func InvalidConfiguration(format string, args ...any) error {
	return &InvalidConfigurationError{Of: "cluster", Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err is or wraps an InvalidConfigurationError.
func IsInvalidConfiguration(err error) bool { return machineprovider.IsInvalidConfiguration(err) }

// RequeueAfterError asks the controller to call again after a delay without treating the call as
// failed: the infrastructure is still being created or deleted.
type RequeueAfterError = machineprovider.RequeueAfterError

// RequeueAfter returns a RequeueAfterError whose reason says what is being waited for
// ("creating the load balancer").
func RequeueAfter(after time.Duration, reason string) error {
	return machineprovider.RequeueAfter(after, reason)
}

// AsRequeueAfter returns the RequeueAfterError err is or wraps, if any.
func AsRequeueAfter(err error) (*RequeueAfterError, bool) { return machineprovider.AsRequeueAfter(err) }
