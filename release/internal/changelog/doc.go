// Package changelog writes a module's release notes in Markdown from its plan: the API changes
// against the last release, the sibling requires the release bumps, and the commits that touched
// the module. `release tag` uses them as the tag's annotation; `release build` writes them to
// dist/<module>/CHANGELOG.md.
package changelog
