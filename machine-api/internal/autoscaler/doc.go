// Package autoscaler reads the cluster-autoscaler's node-group size annotations
// (v1beta1.AutoscalerMinSizeAnnotation, v1beta1.AutoscalerMaxSizeAnnotation) of MachineSets and
// MachineDeployments into the AutoscalerBounds condition both controllers write. It only reports:
// nothing is clamped or rejected.
package autoscaler
