// Package command is the main function machine-manager and cluster-manager share: the flags of
// the manager's and the provider's options, the provider built from them (Manager), logging flags
// and setup, the build line, the signal handling and the exit codes (Main). Each binary's main.go
// holds only what differs: its name, its manager and provider packages, and the build variables
// the release stamps (main.version, main.commit, main.date). It is apart from package
// process so that a provider's binary, which builds its manager through machine-api's manager
// package, does not link the zap logger unless it wants it.
package command
