// Package apivalidation holds the tests of the machine.machineapi.dev/v1beta1 API contract. It has
// no code of its own: the api package may import only the standard library, k8s.io/api and
// k8s.io/apimachinery, so the tests that need a YAML parser, a client or an API server live here.
//
//   - contract_test.go reads the generated CRDs and fails when a kind, plural, field path or scale
//     subresource path that the cluster-autoscaler relies on changes.
//   - validation_test.go installs the CRDs in the source-built kube-apiserver and checks that valid
//     objects round-trip with their defaults, that bad objects are rejected with a message naming
//     the field, that the scale subresource works and that printer columns and the machineapi
//     category show.
package apivalidation
