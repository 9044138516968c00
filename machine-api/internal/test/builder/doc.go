// Package builder makes test objects with fluent builders:
//
//	m := builder.Machine("default", "web-1").WithLabels(map[string]string{"pool": "a"}).WithInstanceType("large").Build()
//
// Every builder starts from an object the API server accepts.
package builder
