// Package statemetricstest checks, in a module's tests, that the machineapi_* metrics a manager
// registers are the ones docs/operations.md lists, with the same labels, and that no label can
// grow with the number of Machines.
package statemetricstest
