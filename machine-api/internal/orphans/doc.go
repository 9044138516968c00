// Package orphans collects instances whose Machine is gone: an instance a provider created for a
// Machine that no longer exists (its finalizer was removed by hand, a create's answer was lost
// while the Machine was deleted, the cluster was restored from a backup) runs, and bills, forever
// unless something notices. The Collector notices: it runs on the elected manager only, every
// Options.Interval, for a provider that implements provider.Lister.
//
// A pass lists the provider's instances and, straight from the API server (not the cache, which
// may lag or be empty after a restart), the UIDs of every Machine; an instance whose Machine UID is
// not among them is an orphan. Each orphan is reported once, when first seen: a log line and a
// Warning event (OrphanInstance, on the namespace the Machine was in) with its provider ID, and
// machineapi_orphan_instances_found_total. It is deleted (provider.Lister.DeleteInstance) only
// when all of these hold:
//
//   - Options.Policy is "delete" (the default; "report" only reports);
//   - it has been an orphan for Options.Grace, counted from when this process first saw it so (a
//     restart starts that count over: a restart only ever delays a deletion), and the instance
//     itself is older than Options.Grace (an instance of unknown age is never deleted);
//   - the pass has not deleted Options.MaxPerPass instances already, nor more than
//     Options.MaxFraction of the instances listed (at least one): a blip that made every
//     instance look orphaned could cost at most that much, and is bounded again in the next pass.
//
// The collector freezes, deletes nothing, and says why (a log line and machineapi_orphan_passes_total
// with outcome frozen) when the Machines cannot be read from the API server; a Lister that fails
// never leads to a deletion either (outcome list_failed). A provider without Lister makes the
// manager log once that orphan collection is off.
//
// Start reading at Collector.Start; choose (pure, table-tested) decides what a pass does.
package orphans
