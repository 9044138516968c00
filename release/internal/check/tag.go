package check

import (
	"context"
	"fmt"

	"machineapi.dev/release/internal/gitrepo"
)

// Tag runs the checks and, when they pass, creates the annotated tag <module>/<version> on HEAD
// with message as its annotation. It never pushes; it returns the tag's name.
func Tag(ctx context.Context, o Options, message string) (string, error) {
	if err := Run(ctx, o); err != nil {
		return "", err
	}
	tag := gitrepo.TagName(o.Module, o.Version)
	if err := o.Repo.CreateTag(ctx, tag, "HEAD", message); err != nil {
		return "", fmt.Errorf("creating tag %s: %w", tag, err)
	}
	return tag, nil
}
