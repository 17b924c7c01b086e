package kargoclient

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// DescribeStage sets a Stage's kargo.akuity.io/description, which the
// Kargo UI shows in the Stage's drawer, to text ("" removes it), with a
// merge patch of that one annotation: it never conflicts with writes of
// the Stage's spec. st is not modified (it may be the cache's object); a
// Stage gone since is no error.
func DescribeStage(ctx context.Context, c client.Client, st *kargo.Stage, text string) error {
	var value any = text
	if text == "" {
		value = nil
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{kargo.DescriptionAnnotation: value}}})
	if err != nil {
		return err
	}
	target := &kargo.Stage{}
	target.Namespace, target.Name = st.Namespace, st.Name
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, raw)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error describing Stage %q: %w", st.Name, err)
	}
	return nil
}
