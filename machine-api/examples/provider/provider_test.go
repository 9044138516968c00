package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/conformance"
)

// TestConformance runs machine-api's provider conformance suite, as every provider should.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Suite{
		Provider: newProvider(),
		NewMachine: func(name string) *v1beta1.Machine {
			return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uuid.NewUUID())}}
		},
	})
}
