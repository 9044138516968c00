// Package builder builds test objects fluently:
//
//	builder.Cluster(ns, "prod").WithPool("workers", 3).WithKubeconfig("prod-kubeconfig").Build()
//	builder.Machine(ns, "m1").InCluster("prod").Remote().WithProviderID("sim:///1").Build()
package builder
