package provider

import (
	"errors"
	"fmt"
	"time"
)

// InvalidConfigurationError says the Cluster's configuration can never work as it is: retrying
// will not help, the user must change the Cluster. The cluster controller sets phase Failed and
// InfrastructureReady=False with reason InvalidConfiguration and the error's message.
type InvalidConfigurationError struct {
	Message string
}

func (e *InvalidConfigurationError) Error() string {
	return "invalid cluster configuration: " + e.Message
}

// InvalidConfiguration returns an InvalidConfigurationError with a formatted message that says
// what to change ("providerSpec.network \"10.0.0.0/33\" is not a CIDR such as 10.0.0.0/16").
func InvalidConfiguration(format string, args ...any) error {
	return &InvalidConfigurationError{Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err is or wraps an InvalidConfigurationError.
func IsInvalidConfiguration(err error) bool {
	var target *InvalidConfigurationError
	return errors.As(err, &target)
}

// RequeueAfterError asks the controller to call again after a delay without treating the call as
// failed: the infrastructure is still being created or deleted.
type RequeueAfterError struct {
	After  time.Duration
	Reason string
}

func (e *RequeueAfterError) Error() string {
	return fmt.Sprintf("%s; trying again in %s", e.Reason, e.After)
}

// RequeueAfter returns a RequeueAfterError whose reason says what is being waited for
// ("creating the load balancer").
func RequeueAfter(after time.Duration, reason string) error {
	return &RequeueAfterError{After: after, Reason: reason}
}

// AsRequeueAfter returns the RequeueAfterError err is or wraps, if any.
func AsRequeueAfter(err error) (*RequeueAfterError, bool) {
	var target *RequeueAfterError
	ok := errors.As(err, &target)
	return target, ok
}
