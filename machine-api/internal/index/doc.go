// Package index registers every field index the controllers of this module look objects up with,
// under the names below. The manager calls Register once, before it sets up any controller, so no
// controller depends on another to register an index first, and no controller package imports
// another for an index name. Tests that start controllers without the manager call Register too.
//
// The node linker (machineapi.dev/nodelink, set up through internal/machinelink) registers its own
// indexes (providerID, addresses) under its own names.
package index
