// Package plugin is kubectl-machine, the kubectl plugin for machine.machineapi.dev objects:
//
//	kubectl machine why <machine>            phase, conditions, owners, health check verdict and recent events on one screen
//	kubectl machine drain-plan <machine>     what draining the machine's Node would do right now (changes nothing)
//	kubectl machine rollout history <md>     a MachineDeployment's revisions
//	kubectl machine rollout undo <md>        go back to the previous (or --to-revision) template
//	kubectl machine rollout plan <md> [-f changed.yaml]
//	                                         per Machine: keep, update in place or replace, and the order (changes nothing)
//
// It takes the usual kubeconfig flags (--kubeconfig, --context, -n, ...) through cli-runtime's
// genericclioptions. Each command reads through one client and writes what it found to the
// command's output, so tests run it against an API server and compare the text.
package plugin
