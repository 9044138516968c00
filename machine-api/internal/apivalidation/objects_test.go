package apivalidation

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The valid objects every case starts from, as plain maps so that a case can also set a field to
// a value of the wrong type.

func validMachineSpec() map[string]any {
	return map[string]any{
		"providerSpec": map[string]any{"value": map[string]any{"instanceType": "small", "disk": map[string]any{"sizeGiB": int64(20)}}},
		"metadata":     map[string]any{"labels": map[string]any{"node-role.kubernetes.io/worker": ""}},
		"taints":       []any{map[string]any{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}},
		"versions":     map[string]any{"kubelet": "v1.37.2"},
		"lifecycleHooks": map[string]any{
			"preDrain":     []any{map[string]any{"name": "backup", "owner": "backup-operator"}},
			"preTerminate": []any{map[string]any{"name": "detach", "owner": "storage-operator"}},
		},
		"deletion": map[string]any{"nodeDrainTimeoutSeconds": int64(300)},
	}
}

func validTemplate() map[string]any {
	spec := validMachineSpec()
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"pool": "workers", "tier": "batch"}},
		"spec":     spec,
	}
}

func validSpec(kind string) map[string]any {
	switch kind {
	case "Machine":
		return validMachineSpec()
	case "MachineSet", "MachineDeployment":
		return map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"pool": "workers"}},
			"template": validTemplate(),
		}
	case "MachineHealthCheck":
		return map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"pool": "workers"}},
			"unhealthyConditions": []any{
				map[string]any{"type": "Ready", "status": "False", "timeoutSeconds": int64(300)},
				map[string]any{"type": "Ready", "status": "Unknown", "timeoutSeconds": int64(300)},
			},
		}
	case "MachineDrainRule":
		return map[string]any{
			"drain":    map[string]any{"behavior": "Drain", "order": int64(10)},
			"machines": []any{map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"pool": "workers"}}}},
			"pods": []any{map[string]any{
				"selector":          map[string]any{"matchLabels": map[string]any{"app": "db"}},
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"tier": "prod"}},
			}},
		}
	case "MachineClass":
		return map[string]any{
			"providerSpec": map[string]any{"instanceType": "large"},
			"nodeTemplate": map[string]any{
				"capacity": map[string]any{"cpu": "4", "memory": "16Gi"},
				"labels":   map[string]any{"node.kubernetes.io/instance-type": "large"},
			},
		}
	}
	panic("unknown kind " + kind)
}

func newObject(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machine.machineapi.dev/v1beta1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       validSpec(kind),
	}}
	return u
}

// set sets a dotted path (numeric parts index lists) to value, creating maps on the way.
func set(obj map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	var cur any = obj
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = value
				return
			}
			if _, ok := c[p]; !ok {
				c[p] = map[string]any{}
			}
			cur = c[p]
		case []any:
			idx := int(p[0] - '0')
			if last {
				c[idx] = value
				return
			}
			cur = c[idx]
		}
	}
}

// del removes a dotted path.
func del(obj map[string]any, path string) {
	parts := strings.Split(path, ".")
	unstructured.RemoveNestedField(obj, parts...)
}
