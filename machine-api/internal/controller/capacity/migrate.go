package capacity

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// recordAnnotation is where versions of machine-manager before server-side apply recorded, as a
// JSON object of key → value, the capacity annotations they had written (with a merge patch, so
// the API server counts them as the merge patch's field manager's). The controller no longer
// writes it: it removes it, once, taking over the keys it names (see takeOver).
const recordAnnotation = v1beta1.Prefix + "capacity-annotations"

// readRecord parses the record annotation; an unreadable record counts as empty (every present
// capacity annotation then counts as someone else's, as it did for the versions that wrote it).
func readRecord(s string) map[string]string {
	out := map[string]string{}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return map[string]string{}
	}
	return out
}

// takeOver returns the managed fields of an object carrying the record annotation rewritten so
// that the capacity annotations the record names as the controller's (present, with the recorded
// value, as the versions that wrote it decided) belong to owner's server-side apply alone, and no
// manager owns the record any more; and those keys, sorted. An annotation set by hand (absent
// from the record, or changed since) keeps its owners. ok is false when annotations carry no
// record. It makes no API calls: the caller writes the result, with the record removed.
func takeOver(annotations map[string]string, managed []metav1.ManagedFieldsEntry, owner string, now metav1.Time) (out []metav1.ManagedFieldsEntry, ours []string, ok bool, err error) {
	data, ok := annotations[recordAnnotation]
	if !ok {
		return nil, nil, false, nil
	}
	record := readRecord(data)
	for _, k := range keys {
		if v, present := annotations[k]; present && record[k] == v {
			ours = append(ours, k)
		}
	}
	mine := -1
	for _, e := range managed {
		if e.Manager == owner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			mine = len(out)
			out = append(out, e)
			continue
		}
		fields, err := annotationFields(e.FieldsV1, ours, false)
		if err != nil {
			return nil, nil, false, fmt.Errorf("reading the managed fields of %q: %w", e.Manager, err)
		}
		// The record goes too: its removal then takes nobody's field.
		if fields, err = annotationFields(fields, []string{recordAnnotation}, false); err != nil {
			return nil, nil, false, fmt.Errorf("reading the managed fields of %q: %w", e.Manager, err)
		}
		if fields == nil {
			continue // owns nothing any more
		}
		e.FieldsV1 = fields
		out = append(out, e)
	}
	if len(ours) == 0 {
		return out, nil, true, nil
	}
	if mine < 0 {
		mine = len(out)
		out = append(out, metav1.ManagedFieldsEntry{
			Manager: owner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: v1beta1.GroupVersion.String(),
			Time: &now, FieldsType: "FieldsV1",
		})
	}
	if out[mine].FieldsV1, err = annotationFields(out[mine].FieldsV1, ours, true); err != nil {
		return nil, nil, false, fmt.Errorf("reading the managed fields of %q: %w", owner, err)
	}
	return out, ours, true, nil
}

// annotationFields returns fields (a managed fields entry's set, FieldsV1) with the annotation
// keys added (add) or removed, or nil when nothing is left in it; fields itself when that changes
// nothing. Fields are nested objects
// keyed "f:<field>"; {} marks a field owned whole, "." the node itself.
func annotationFields(fields *metav1.FieldsV1, keys []string, add bool) (*metav1.FieldsV1, error) {
	set := map[string]any{}
	if raw := fields.GetRawBytes(); len(raw) > 0 {
		if err := json.Unmarshal(raw, &set); err != nil {
			return nil, err
		}
	}
	metadata, _ := set["f:metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
	}
	annotations, _ := metadata["f:annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	changed := false
	for _, k := range keys {
		_, has := annotations["f:"+k]
		switch {
		case add && !has:
			annotations["f:"+k] = map[string]any{}
		case !add && has:
			delete(annotations, "f:"+k)
		default:
			continue
		}
		changed = true
	}
	if !changed {
		return fields, nil
	}
	// An emptied object would read as a field owned whole: drop it, up to the top.
	setOrDrop(metadata, "f:annotations", annotations)
	setOrDrop(set, "f:metadata", metadata)
	if len(set) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return metav1.NewFieldsV1(string(raw)), nil
}

func setOrDrop(parent map[string]any, key string, child map[string]any) {
	if len(child) == 0 {
		delete(parent, key)
		return
	}
	parent[key] = child
}
