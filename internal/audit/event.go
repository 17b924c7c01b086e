package audit

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// Sink takes records to append to a FleetStage's trail.
type Sink interface {
	Record(e Entry)
}

// ControllerActor is the actor of the controller's own decisions.
const ControllerActor = "kargo-fleet"

// startedBy are the actions a rollout's starter asked for: the record
// names spec.actor. intentOf are those its intent's last writer asked for.
var (
	startedBy = map[string]bool{"SnapshotTaken": true, "WavePromoted": true}
	intentOf  = map[string]bool{"RolloutPaused": true, "RolloutResumed": true, "RolloutAborted": true}
)

// FromEvent is the record of a decision the controller reported as an Event
// about regarding (a FleetRollout or a FleetStage), related to a Kargo
// Stage or Freight. It reports false for an Event about anything else.
func FromEvent(regarding, related runtime.Object, eventType, reason, message string, now metav1.MicroTime) (Entry, bool) {
	e := Entry{AuditRecord: fleetv1alpha1.AuditRecord{Time: now, Action: reason, Type: eventType, Message: message,
		Actor: ControllerActor}}
	switch o := regarding.(type) {
	case *fleetv1alpha1.FleetRollout:
		e.Namespace, e.FleetStage = o.Namespace, o.Spec.FleetStage
		e.Rollout, e.Freight = o.Name, o.Spec.Freight.Name
		switch {
		case (startedBy[reason] || reason == "RollbackStarted" && o.Spec.Direction == fleetv1alpha1.DirectionRollback) &&
			o.Spec.Actor != "":
			e.Actor = o.Spec.Actor
		case intentOf[reason]:
			if a := o.Annotations[fleetv1alpha1.IntentActorAnnotation]; a != "" {
				e.Actor = a
			}
		}
		e.Wave = waveOf(o, related)
	case *fleetv1alpha1.FleetStage:
		e.Namespace, e.FleetStage = o.Namespace, o.Name
	default:
		return Entry{}, false
	}
	if ref, ok := related.(*corev1.ObjectReference); ok && ref != nil {
		switch ref.Kind {
		case "Stage":
			e.Stage = ref.Name
		case "Freight":
			if e.Freight == "" {
				e.Freight = ref.Name
			}
		}
	}
	if ro, ok := regarding.(*fleetv1alpha1.FleetRollout); ok && reason == "SnapshotTaken" {
		// A rollout's plan snapshot is taken when it starts.
		e.Action = RolloutStartedAction
		e.Message += "; " + pathOf(ro)
	}
	return e, e.Namespace != "" && e.FleetStage != ""
}

// waveOf is the wave whose wave Stage related is.
func waveOf(ro *fleetv1alpha1.FleetRollout, related runtime.Object) string {
	ref, ok := related.(*corev1.ObjectReference)
	if !ok || ref == nil || ref.Kind != "Stage" {
		return ""
	}
	wave, ok := strings.CutPrefix(ref.Name, render.WaveStageName(ro.Spec.FleetStage, ""))
	if !ok {
		return ""
	}
	for _, w := range ro.Status.Waves {
		if w.Name == wave {
			return wave
		}
	}
	return ""
}

// RolloutStartedAction is the action of a rollout's first record.
const RolloutStartedAction = "RolloutStarted"

// pathOf says how a rollout was asked for: through a Kargo Promotion (the
// fleet-wave step records it) or directly (kargo-fleet, the API).
func pathOf(ro *fleetv1alpha1.FleetRollout) string {
	if key := ro.Annotations[fleetv1alpha1.StepKeyAnnotation]; key != "" {
		promotion, _, _ := strings.Cut(key, "/")
		return "asked through Kargo Promotion " + promotion
	}
	if strings.HasPrefix(ro.Spec.Actor, ControllerActor+":") {
		return "decided by the controller"
	}
	return "asked through the FleetRollout API (kargo-fleet)"
}

// Detail is what a decision's caller knows that its Event does not carry:
// who asked, as Kargo names them and as the API server authenticated them,
// and the Freight.
type Detail struct {
	Actor, Identity, Freight string
}

type detailKey struct{}

// WithDetail hands d to the audit record of an Event recorded with ctx.
func WithDetail(ctx context.Context, d Detail) context.Context {
	return context.WithValue(ctx, detailKey{}, d)
}

// Apply sets what ctx's Detail says on e.
func Apply(ctx context.Context, e *Entry) {
	d, ok := ctx.Value(detailKey{}).(Detail)
	if !ok {
		return
	}
	if d.Actor != "" {
		e.Actor = d.Actor
	}
	if d.Identity != "" {
		e.Identity = d.Identity
	}
	if d.Freight != "" {
		e.Freight = d.Freight
	}
}
