// Package index registers every field index the controllers of cluster-api look objects up with,
// under the names below. The manager calls Register once, before it sets up any controller, so no
// controller depends on another to register an index first, and no controller package imports
// another for an index name. Tests that start controllers without the manager call Register too.
//
// machine-api's controllers, which a cluster-manager does not run, register their own indexes
// (machineapi.dev/machine-api/manager); each remote node linker registers nodelink's in its own
// cache of the workload cluster.
package index
