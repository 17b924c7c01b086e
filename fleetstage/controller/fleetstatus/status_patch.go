package fleetstatus

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// fleetStageStatusPatch is a JSON merge patch of a FleetStage's status
// alone, computed from the status before and after a change.
// client.MergeFrom marshals and diffs the whole object, spec included: with
// ten thousand inline targets that is megabytes of JSON and maps for every
// status write of a few bytes. The status subresource ignores everything
// but the status, so the patch it gets is the same.
type fleetStageStatusPatch struct {
	before, after *fleetv1alpha1.FleetStageStatus
	// resourceVersion, when set, makes the patch apply only to that version
	// of the FleetStage (optimistic lock).
	resourceVersion string
}

var _ client.Patch = fleetStageStatusPatch{}

// statusDocument is the part of a FleetStage the patch is computed on.
type statusDocument struct {
	Metadata *lockMetadata                   `json:"metadata,omitempty"`
	Status   *fleetv1alpha1.FleetStageStatus `json:"status"`
}

type lockMetadata struct {
	ResourceVersion string `json:"resourceVersion"`
}

// Type implements client.Patch.
func (fleetStageStatusPatch) Type() types.PatchType { return types.MergePatchType }

// Data implements client.Patch; the object patched does not matter.
func (p fleetStageStatusPatch) Data(client.Object) ([]byte, error) {
	before, err := json.Marshal(statusDocument{Status: p.before})
	if err != nil {
		return nil, fmt.Errorf("error marshalling the FleetStage status before: %w", err)
	}
	doc := statusDocument{Status: p.after}
	if p.resourceVersion != "" {
		// Not in the "before" document: the merge patch then carries it,
		// and the apiserver refuses the patch if the object has moved on.
		doc.Metadata = &lockMetadata{ResourceVersion: p.resourceVersion}
	}
	after, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("error marshalling the FleetStage status after: %w", err)
	}
	return jsonpatch.CreateMergePatch(before, after)
}

// Patch writes the change from before to after to the
// status of fs without touching fs, which may be the informer cache's own
// object. The patch goes through the metadata client, so the apiserver
// answers with the object's metadata instead of the whole FleetStage.
func Patch(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage, before, after *fleetv1alpha1.FleetStageStatus) error {
	into := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: fs.Name}}
	into.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("FleetStage"))
	return c.Status().Patch(ctx, into, fleetStageStatusPatch{before: before, after: after})
}

// PatchLocked is Patch applied only to the version of fs it was computed
// from: a conflict means fs was stale. A writer whose change replaces a
// list (conditions) uses it, so it never writes back what another writer
// changed since its read.
func PatchLocked(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage, before, after *fleetv1alpha1.FleetStageStatus) error {
	into := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: fs.Name}}
	into.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("FleetStage"))
	return c.Status().Patch(ctx, into, fleetStageStatusPatch{before: before, after: after, resourceVersion: fs.ResourceVersion})
}
