package changelog

import (
	"fmt"
	"strings"
	"time"

	"machineapi.dev/release/internal/plan"
	"machineapi.dev/release/internal/versions"
)

// Render returns the release notes of module m released as version on date.
func Render(m *plan.Module, version string, date time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s %s (%s)\n\n", m.Name, version, date.UTC().Format(time.DateOnly))
	fmt.Fprintf(&b, "Module `%s`, %s.", m.Path, m.Stability)
	if m.LastTag != "" {
		fmt.Fprintf(&b, " Changes since %s/%s.", m.Name, m.LastTag)
	} else {
		b.WriteString(" First release.")
	}
	b.WriteString("\n")
	if m.API != nil {
		section(&b, "Incompatible API changes", m.API.Incompatible)
		if len(m.API.Incompatible) > 0 && m.Stability != versions.Alpha {
			b.WriteString("\nMigration: _say here how a consumer adapts to each incompatible change._\n")
		}
		section(&b, "API additions", m.API.Compatible)
	}
	var deps []string
	for _, r := range m.Requires {
		from := r.Previous
		if from == "" {
			from = r.Current
		}
		if from != r.Planned {
			deps = append(deps, fmt.Sprintf("`%s` %s → %s", r.Path, from, r.Planned))
		}
	}
	section(&b, "Dependencies", deps)
	var commits []string
	for _, c := range m.Commits {
		subject := strings.TrimPrefix(c.Subject, m.Name+": ")
		commits = append(commits, fmt.Sprintf("%s (%s)", subject, c.Hash[:min(len(c.Hash), 12)]))
	}
	section(&b, "Commits", commits)
	return b.String()
}

func section(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### %s\n\n", title)
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
}
