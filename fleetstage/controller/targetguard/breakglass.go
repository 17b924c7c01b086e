package targetguard

import (
	"context"
	"fmt"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// breakGlassPrefix begins the description the guard writes on a target
// Stage a break-glass Promotion went into: the Kargo UI shows a Stage's
// description in its drawer, and its "Created By" column shows only the
// part of a Promotion's create-actor between the first and second colon
// ("system" for every ServiceAccount), so the full identity is written
// where the Stage is looked at.
const breakGlassPrefix = "Break-glass: "

// maxDescription bounds the description: its reason is the user's text.
const maxDescription = 1024

// BreakGlassDescription is the target Stage's description after break-glass
// Promotion p: who pushed which Freight, when and why.
func BreakGlassDescription(p *kargo.Promotion) string {
	return strutil.Ellipsis(fmt.Sprintf("%sFreight %s promoted by %s (Promotion %s, %s), outside the fleet's waves: %s",
		breakGlassPrefix, p.Spec.Freight, p.Annotations[kargo.CreateActorAnnotation], p.Name,
		p.CreationTimestamp.UTC().Format("2006-01-02 15:04:05 MST"),
		strings.TrimSpace(p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation])), maxDescription)
}

// describeBreakGlass writes the break-glass description on the target
// Stage st, unless a newer Promotion already ran there.
func (r *Reconciler) describeBreakGlass(ctx context.Context, st *kargo.Stage, p *kargo.Promotion) error {
	if movedOn(st, p) {
		return nil
	}
	return r.setDescription(ctx, st, BreakGlassDescription(p))
}

// clearBreakGlass removes a break-glass description from target Stage st
// once kargo-fleet's own Promotion succeeded there: the target runs the
// fleet's Freight again.
func (r *Reconciler) clearBreakGlass(ctx context.Context, st *kargo.Stage) error {
	if !strings.HasPrefix(st.Annotations[kargo.DescriptionAnnotation], breakGlassPrefix) {
		return nil
	}
	return r.setDescription(ctx, st, "")
}

// setDescription writes the Stage's description unless it already reads
// text.
func (r *Reconciler) setDescription(ctx context.Context, st *kargo.Stage, text string) error {
	if st.Annotations[kargo.DescriptionAnnotation] == text {
		return nil
	}
	return kargoclient.DescribeStage(ctx, r.client, st, text)
}
