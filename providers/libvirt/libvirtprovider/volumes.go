package libvirtprovider

import (
	"bytes"
	"encoding/xml"
	"fmt"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/apimachinery/pkg/types"
)

// Volume names are derived from the Machine's UID, so that they are found again without the
// domain (after a crash, or a Delete that got halfway).
func diskVolume(uid types.UID) string { return "machineapi-" + string(uid) + "-disk.qcow2" }
func seedVolume(uid types.UID) string { return "machineapi-" + string(uid) + "-seed.img" }

// volumeRead is the part of a volume's XML the provider reads.
type volumeRead struct {
	Capacity uint64 `xml:"capacity"`
	Target   struct {
		Path   string `xml:"path"`
		Format struct {
			Type string `xml:"type,attr"`
		} `xml:"format"`
	} `xml:"target"`
}

// volumeXML is a volume to create: a raw one, or a qcow2 overlay of a backing volume.
type volumeXML struct {
	XMLName  xml.Name `xml:"volume"`
	Name     string   `xml:"name"`
	Capacity sizeXML  `xml:"capacity"`
	Target   struct {
		Format attrs `xml:"format"`
	} `xml:"target"`
	BackingStore *backingXML `xml:"backingStore,omitempty"`
}

type backingXML struct {
	Path   string `xml:"path"`
	Format attrs  `xml:"format"`
}

// renderOverlay is the XML of a qcow2 volume of the given virtual size whose backing file is base.
func renderOverlay(name string, size uint64, base volumeRead) ([]byte, error) {
	v := volumeXML{Name: name, Capacity: sizeXML{Unit: "bytes", Value: int64(size)}}
	v.Target.Format = attr("type", "qcow2")
	format := base.Target.Format.Type
	if format == "" {
		format = "raw"
	}
	v.BackingStore = &backingXML{Path: base.Target.Path, Format: attr("type", format)}
	return xml.MarshalIndent(v, "", "  ")
}

// renderRaw is the XML of a raw volume of the given size.
func renderRaw(name string, size uint64) ([]byte, error) {
	v := volumeXML{Name: name, Capacity: sizeXML{Unit: "bytes", Value: int64(size)}}
	v.Target.Format = attr("type", "raw")
	return xml.MarshalIndent(v, "", "  ")
}

// pool looks a storage pool up; found is false when the host has none of that name.
func pool(conn *libvirt.Libvirt, name string) (p libvirt.StoragePool, found bool, err error) {
	p, err = conn.StoragePoolLookupByName(name)
	if libvirtCode(err, libvirt.ErrNoStoragePool) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("looking up storage pool %s: %w", name, err)
	}
	return p, true, nil
}

// volume looks a volume up in a pool; found is false when there is none of that name.
func volume(conn *libvirt.Libvirt, p libvirt.StoragePool, name string) (v libvirt.StorageVol, found bool, err error) {
	v, err = conn.StorageVolLookupByName(p, name)
	if libvirtCode(err, libvirt.ErrNoStorageVol) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("looking up volume %s in pool %s: %w", name, p.Name, err)
	}
	return v, true, nil
}

// describeVolume reads a volume's capacity, path and format.
func describeVolume(conn *libvirt.Libvirt, v libvirt.StorageVol) (volumeRead, error) {
	data, err := conn.StorageVolGetXMLDesc(v, 0)
	if err != nil {
		return volumeRead{}, fmt.Errorf("reading volume %s: %w", v.Name, err)
	}
	var r volumeRead
	if err := xml.Unmarshal([]byte(data), &r); err != nil {
		return volumeRead{}, fmt.Errorf("reading volume %s: %w", v.Name, err)
	}
	return r, nil
}

// deleteVolume deletes a volume of the pool if it is there.
func deleteVolume(conn *libvirt.Libvirt, p libvirt.StoragePool, name string) error {
	v, found, err := volume(conn, p, name)
	if err != nil || !found {
		return err
	}
	if err := conn.StorageVolDelete(v, 0); err != nil && !libvirtCode(err, libvirt.ErrNoStorageVol) {
		return fmt.Errorf("deleting volume %s from pool %s: %w", name, p.Name, err)
	}
	return nil
}

// createOverlay (re)creates the Machine's disk: a qcow2 overlay of the image volume.
func createOverlay(conn *libvirt.Libvirt, p libvirt.StoragePool, name string, size uint64, base volumeRead) error {
	if err := deleteVolume(conn, p, name); err != nil {
		return err
	}
	data, err := renderOverlay(name, size, base)
	if err != nil {
		return err
	}
	if _, err := conn.StorageVolCreateXML(p, string(data), 0); err != nil {
		return fmt.Errorf("creating the disk overlay %s in pool %s: %w", name, p.Name, err)
	}
	return nil
}

// createSeed (re)creates the Machine's seed volume and uploads its content through libvirt, which
// works against a remote host as well as a local one.
func createSeed(conn *libvirt.Libvirt, p libvirt.StoragePool, name string, content []byte) error {
	if err := deleteVolume(conn, p, name); err != nil {
		return err
	}
	data, err := renderRaw(name, uint64(len(content)))
	if err != nil {
		return err
	}
	v, err := conn.StorageVolCreateXML(p, string(data), 0)
	if err != nil {
		return fmt.Errorf("creating the seed volume %s in pool %s: %w", name, p.Name, err)
	}
	if err := conn.StorageVolUpload(v, bytes.NewReader(content), 0, uint64(len(content)), 0); err != nil {
		return fmt.Errorf("uploading the seed to volume %s in pool %s: %w", name, p.Name, err)
	}
	return nil
}
