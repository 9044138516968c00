package provider

import (
	"errors"
	"fmt"
	"time"
)

// InvalidConfigurationError says the Machine's configuration can never work as it is: retrying
// will not help, the user must change the Machine or its MachineClass. The machine controller
// sets phase Failed with failureReason InvalidConfiguration and the error's message.
// cluster-api's provider package reuses it for a Cluster's configuration.
type InvalidConfigurationError struct {
	// Of names what is misconfigured, as in "invalid <Of> configuration: ..."; empty means
	// "machine" (cluster-api's providers set "cluster").
	Of      string
	Message string
}

func (e *InvalidConfigurationError) Error() string {
	of := e.Of
	if of == "" {
		of = "machine"
	}
	return "invalid " + of + " configuration: " + e.Message
}

// InvalidConfiguration returns an InvalidConfigurationError with a formatted message that says what
// to change ("providerSpec.value.instanceType \"huge\" is not offered; use one of small, large").
func InvalidConfiguration(format string, args ...any) error {
	return &InvalidConfigurationError{Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err is or wraps an InvalidConfigurationError.
func IsInvalidConfiguration(err error) bool {
	var target *InvalidConfigurationError
	return errors.As(err, &target)
}

// RequeueAfterError asks the controller to call again after a delay, without treating the call as
// failed: the instance is busy, a quota frees up later, and so on.
type RequeueAfterError struct {
	After  time.Duration
	Reason string
}

func (e *RequeueAfterError) Error() string {
	return fmt.Sprintf("%s; trying again in %s", e.Reason, e.After)
}

// RequeueAfter returns a RequeueAfterError.
func RequeueAfter(after time.Duration, reason string) error {
	return &RequeueAfterError{After: after, Reason: reason}
}

// AsRequeueAfter returns the RequeueAfterError err is or wraps, if any.
func AsRequeueAfter(err error) (*RequeueAfterError, bool) {
	var target *RequeueAfterError
	ok := errors.As(err, &target)
	return target, ok
}
