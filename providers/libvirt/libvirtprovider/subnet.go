package libvirtprovider

import (
	"fmt"
	"hash/fnv"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/apimachinery/pkg/types"
)

// User-network subnets are 10.0.N.0/24 with N in [firstIndex, lastIndex].
const firstIndex, lastIndex = 1, 254

// allocateIndex picks a user-network subnet index not in used. It starts from a point derived
// from the Machine's UID and takes the next free index from there, so that an index a deleted
// Machine just freed is seldom handed out again at once (its Node, and the InternalIP the node
// linker knows it by, may still be going away). ok is false when every index is used.
func allocateIndex(used map[int32]bool, uid types.UID) (index int32, ok bool) {
	const n = lastIndex - firstIndex + 1
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	start := int32(h.Sum32() % n)
	for i := range int32(n) {
		index := firstIndex + (start+i)%n
		if !used[index] {
			return index, true
		}
	}
	return 0, false
}

// usedIndexes reads the user-network subnet indexes of the domains this manager defined on the
// host, from their metadata.
func usedIndexes(conn *libvirt.Libvirt, manager string) (map[int32]bool, error) {
	doms, _, err := conn.ConnectListAllDomains(1, libvirt.ConnectListDomainsActive|libvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, fmt.Errorf("listing domains: %w", err)
	}
	used := map[int32]bool{}
	for _, d := range doms {
		data, err := conn.DomainGetXMLDesc(d, 0)
		if libvirtCode(err, libvirt.ErrNoDomain) {
			continue // undefined since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("reading domain %s: %w", d.Name, err)
		}
		r, err := readDomain(data)
		if err != nil {
			return nil, err
		}
		if m := r.Metadata.Machine; m != nil && m.Manager == manager && m.UserNetworkIndex != 0 {
			used[m.UserNetworkIndex] = true
		}
	}
	return used, nil
}
