// Package stack runs the whole machine-api manager (every controller, the node linker and the
// simulated provider) against a test API server, for envtest suites that check what a user sees.
//
//	env, _ := envtest.Start()
//	st, _ := stack.Start(env.Config, stack.Options{})
//	defer st.Stop()
//	... create Machines with st.Client, assert with Eventually ...
//
// Stop and Start again with the same Provider to simulate a manager restart: the simulated
// instances survive, as they would in a cloud.
package stack
