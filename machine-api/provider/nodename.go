package provider

import (
	"strings"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// NodeName is a name for the Node of Machine m that is unique across namespaces and re-creations:
// the Machine's name (cut to fit) plus five characters of its UID, at most 63 characters, as a
// kubelet's hostname and its kubernetes.io/hostname label must be. A provider whose instances
// register under a name it chooses can use it; the simulator and the libvirt provider do.
func NodeName(m *v1beta1.Machine) string {
	const maxHostname, suffix = 63, 6 // "-" and five characters of the UID
	name := m.Name
	if len(name) > maxHostname-suffix {
		name = name[:maxHostname-suffix]
	}
	uid := strings.ReplaceAll(string(m.UID), "-", "")
	if len(uid) > 5 {
		uid = uid[:5]
	}
	return strings.TrimRight(name, "-.") + "-" + uid
}
