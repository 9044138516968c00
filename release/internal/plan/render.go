package plan

import (
	"fmt"
	"io"
	"strings"
)

// maxCommits bounds the commits the text plan lists per module; the changelog lists them all.
const maxCommits = 15

// Write prints the plan for a person.
func (p *Plan) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Release plan at %s", short(p.Head))
	if p.Dirty {
		b.WriteString(" (work tree has uncommitted changes: the API is read from the work tree)")
	}
	b.WriteString("\n\nOrder:")
	for i, wave := range p.Waves {
		if i > 0 {
			b.WriteString(" →")
		}
		b.WriteString(" " + strings.Join(wave, ", "))
	}
	b.WriteString("\n")
	for _, m := range p.Modules {
		b.WriteString("\n")
		m.write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (m *Module) write(b *strings.Builder) {
	last := "never released"
	if m.LastTag != "" {
		last = "last release " + m.Name + "/" + m.LastTag
	}
	next := "nothing to release"
	switch {
	case m.Next != "" && m.LastTag == "":
		next = "next " + m.Next + " (first release)"
	case m.Next != "":
		next = "next " + m.Next + " (" + m.Change.String() + ")"
	}
	fmt.Fprintf(b, "%s (%s, %s): %s; %s\n", m.Name, m.Path, m.Stability, last, next)
	since := "in its history"
	if m.LastTag != "" {
		since = "since " + m.LastTag
	}
	fmt.Fprintf(b, "  commits %s: %d\n", since, len(m.Commits))
	for i, c := range m.Commits {
		if i == maxCommits {
			fmt.Fprintf(b, "    … and %d more (release changelog %s)\n", len(m.Commits)-maxCommits, m.Name)
			break
		}
		fmt.Fprintf(b, "    %s %s\n", short(c.Hash), c.Subject)
	}
	switch {
	case m.API == nil && m.LastTag == "":
		b.WriteString("  API: first release, nothing to compare\n")
	case m.API == nil:
		b.WriteString("  API: not compared\n")
	case len(m.API.Incompatible)+len(m.API.Compatible) == 0:
		b.WriteString("  API: no exported changes\n")
	default:
		for _, c := range m.API.Incompatible {
			fmt.Fprintf(b, "  API incompatible: %s\n", c)
		}
		for _, c := range m.API.Compatible {
			fmt.Fprintf(b, "  API compatible:   %s\n", c)
		}
	}
	for _, r := range m.Requires {
		if r.Bumped() {
			fmt.Fprintf(b, "  require %s %s => %s\n", r.Path, r.Current, r.Planned)
		} else {
			fmt.Fprintf(b, "  require %s %s (unchanged)\n", r.Path, r.Current)
		}
	}
	for _, n := range m.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
