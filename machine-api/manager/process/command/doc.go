// Package command is the main function machine-manager and cluster-manager share: logging flags
// and setup, the build line, the signal handling and the exit codes. It is apart from package
// process so that a provider's binary, which builds its manager through machine-api's manager
// package, does not link the zap logger unless it wants it.
package command
