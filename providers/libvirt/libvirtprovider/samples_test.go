package libvirtprovider

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestSampleClassesAreValid keeps the MachineClasses of config/samples (and of
// docs/providers/libvirt.md, which shows them) acceptable to the provider.
func TestSampleClassesAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "machineclass-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample MachineClasses: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			class := &v1beta1.MachineClass{}
			if err := yaml.UnmarshalStrict(data, class); err != nil {
				t.Fatal(err)
			}
			m := machineWith("")
			m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: class.Spec.ProviderSpec.Raw}
			if _, err := parseSpec(m); err != nil {
				t.Fatal(err)
			}
		})
	}
}
