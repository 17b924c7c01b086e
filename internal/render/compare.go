package render

import (
	"encoding/json"
	"reflect"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// UpToDate reports whether an existing generated Stage already carries
// everything the desired one renders: its labels, annotations, controller
// reference and spec. Fields the desired Stage does not set (other labels,
// Kargo's own annotations, unknown spec fields) are ignored, so Kargo and
// other tools can add to a Stage without making the controller rewrite it.
// spec.shard counts only when the desired Stage manages it (ShardAnnotation).
func UpToDate(existing, desired *kargo.Stage) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	if !hasOwner(existing, desired) {
		return false
	}
	if managesShard(desired) && existing.Spec.Shard != desired.Spec.Shard {
		return false
	}
	return sameJSON(existing.Spec, desired.Spec)
}

// Apply copies what the desired Stage renders onto existing (which keeps
// everything else), ready for a merge patch.
func Apply(existing, desired *kargo.Stage) {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		existing.Labels[k] = v
	}
	if len(desired.Annotations) > 0 && existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	for k, v := range desired.Annotations {
		existing.Annotations[k] = v
	}
	if !hasOwner(existing, desired) {
		existing.OwnerReferences = append(existing.OwnerReferences, desired.OwnerReferences...)
	}
	shard := existing.Spec.Shard
	existing.Spec = *desired.Spec.DeepCopy()
	if !managesShard(desired) {
		existing.Spec.Shard = shard
		return
	}
	// Kargo's defaulting webhook removes the label of the default shard.
	if desired.Spec.Shard == "" {
		delete(existing.Labels, kargo.ShardLabel)
	}
}

func hasOwner(existing, desired *kargo.Stage) bool {
	for _, want := range desired.OwnerReferences {
		found := false
		for _, got := range existing.OwnerReferences {
			if got.UID == want.UID && got.Kind == want.Kind {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sameJSON compares two values by their JSON form, so formatting differences
// in raw JSON fields (config, verification) do not count as changes.
func sameJSON(a, b kargo.StageSpec) bool {
	a.Shard, b.Shard = "", ""
	return reflect.DeepEqual(normalise(a), normalise(b))
}

func normalise(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return err.Error()
	}
	return out
}
