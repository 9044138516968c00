package changelog

import (
	"fmt"
	"time"

	"machineapi.dev/release/internal/apicompat"
	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/plan"
	"machineapi.dev/release/internal/versions"
)

func ExampleRender() {
	m := &plan.Module{
		Name: "machine-api", Path: "machineapi.dev/machine-api", Stability: versions.Beta, LastTag: "v0.4.0",
		API: &apicompat.Report{
			Incompatible: []string{"./manager: Options.SyncPeriod: removed"},
			Compatible:   []string{"./manager: Options.Clock: added"},
		},
		Requires: []plan.Require{
			{Path: "machineapi.dev/drain", Current: "v0.3.0", Planned: "v0.3.1"},
			{Path: "machineapi.dev/nodelink", Current: "v0.2.0", Planned: "v0.2.0"},
		},
		Commits: []gitrepo.Commit{{Hash: "0123456789abcdef0123", Subject: "machine-api: inject the clock"}},
	}
	fmt.Print(Render(m, "v0.5.0", time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)))
	// Output:
	// ## machine-api v0.5.0 (2026-03-04)
	//
	// Module `machineapi.dev/machine-api`, beta. Changes since machine-api/v0.4.0.
	//
	// ### Incompatible API changes
	//
	// - ./manager: Options.SyncPeriod: removed
	//
	// Migration: _say here how a consumer adapts to each incompatible change._
	//
	// ### API additions
	//
	// - ./manager: Options.Clock: added
	//
	// ### Dependencies
	//
	// - `machineapi.dev/drain` v0.3.0 → v0.3.1
	//
	// ### Commits
	//
	// - inject the clock (0123456789ab)
}
