package kargoevents

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// writeTimeout bounds one Event write: an Event is worth a second, never a
// stuck reconcile.
const writeTimeout = 5 * time.Second

// maxMessage bounds an Event's message, as the recorder does.
const maxMessage = 1024

// Recorder records every Event through the wrapped recorder and, when its
// related object is a Kargo object, also as a core/v1 Event about that
// object.
type Recorder struct {
	inner     events.EventRecorder
	client    client.Client
	clock     clock.PassiveClock
	component string
	instance  string
	audit     audit.Sink
}

var _ events.EventRecorder = &Recorder{}

// NewRecorder wraps inner; component names the reporting controller, as
// inner's Events name it.
func NewRecorder(inner events.EventRecorder, c client.Client, clk clock.PassiveClock, component string) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{inner: inner, client: c, clock: clk, component: component, instance: component + "-" + host}
}

// WithAudit also records every Event about a FleetRollout or FleetStage in
// the FleetStage's audit trail: an Event outlives no more than the API
// server's --event-ttl, the trail does.
func (r *Recorder) WithAudit(sink audit.Sink) *Recorder {
	r.audit = sink
	return r
}

// Eventf implements events.EventRecorder.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if r.inner != nil {
		r.inner.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
	r.recordAudit(context.Background(), regarding, related, eventtype, reason, "", fmt.Sprintf(note, args...))
	ref, ok := KargoObject(related)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	e := r.event(ref, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err := r.client.Create(ctx, e); err != nil {
		// An Event is best effort, as with every recorder: the decision is
		// in the status already.
		ctrl.Log.WithName("kargoevents").Info("Recording an Event on a Kargo object failed",
			"kind", ref.Kind, "name", ref.Name, "reason", reason, "error", err.Error())
	}
}

// EventOnce records an Event about a decision that must be recorded once,
// however many controller processes look at it (leader changes, restarts):
// the core/v1 Event about the related Kargo object is named after key, so a
// second try finds it and records nothing, not even through the wrapped
// recorder. It reports whether this call recorded it. An Event outlives no
// more than the API server's --event-ttl: the key dedupes within it.
func (r *Recorder) EventOnce(ctx context.Context, key string, regarding, related runtime.Object, eventtype, reason, action,
	note string, args ...any) (bool, error) {
	ref, ok := KargoObject(related)
	if !ok {
		return false, fmt.Errorf("recording %s once needs a related Kargo object", reason)
	}
	e := r.event(ref, eventtype, reason, action, fmt.Sprintf(note, args...))
	e.Name = key
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	switch err := r.client.Create(ctx, e); {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("error recording %s Event %q: %w", reason, key, err)
	}
	if r.inner != nil {
		r.inner.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
	r.recordAudit(ctx, regarding, related, eventtype, reason, key, e.Message)
	return true, nil
}

// recordAudit hands the decision an Event reports to the audit trail; key,
// when set, makes the trail hold it once.
func (r *Recorder) recordAudit(ctx context.Context, regarding, related runtime.Object, eventtype, reason, key, message string) {
	if r.audit == nil {
		return
	}
	e, ok := audit.FromEvent(regarding, related, eventtype, reason, strutil.Ellipsis(message, maxMessage),
		metav1.NewMicroTime(r.clock.Now()))
	if !ok {
		return
	}
	e.Key = key
	audit.Apply(ctx, &e)
	r.audit.Record(e)
}

// event builds a core/v1 Event about a Kargo object, with the fields the
// Kargo UI shows (message, reason, count, first and last timestamps) and
// the annotations Kargo puts on its own Events.
func (r *Recorder) event(ref *corev1.ObjectReference, eventtype, reason, action, message string) *corev1.Event {
	now := r.clock.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ref.Namespace,
			Name:        fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()),
			Annotations: annotations(ref),
		},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             strutil.Ellipsis(message, maxMessage),
		Type:                eventtype,
		Source:              corev1.EventSource{Component: r.component},
		FirstTimestamp:      metav1.NewTime(now),
		LastTimestamp:       metav1.NewTime(now),
		Count:               1,
		Action:              action,
		ReportingController: r.component,
		ReportingInstance:   strutil.Truncate(r.instance, 128),
	}
}

// annotations returns the annotations Kargo puts on its own Events about
// the object ref names.
func annotations(ref *corev1.ObjectReference) map[string]string {
	out := map[string]string{kargo.EventProjectAnnotation: ref.Namespace}
	switch ref.Kind {
	case "Stage":
		out[kargo.EventStageAnnotation] = ref.Name
	case "Freight":
		out[kargo.EventFreightAnnotation] = ref.Name
	}
	return out
}

// KargoObject returns the reference of obj when it is a Kargo object: an
// *corev1.ObjectReference in the kargo.akuity.io group, as Stage and
// Freight return.
func KargoObject(obj runtime.Object) (*corev1.ObjectReference, bool) {
	ref, ok := obj.(*corev1.ObjectReference)
	if !ok || ref == nil {
		return nil, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != kargo.GroupVersion.Group || ref.Name == "" || ref.Namespace == "" {
		return nil, false
	}
	return ref, true
}

// Stage references a Kargo Stage, as the related object of an Event.
func Stage(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: kargo.GroupVersion.String(), Kind: "Stage", Namespace: namespace, Name: name}
}

// Freight references a Kargo Freight, as the related object of an Event.
func Freight(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: kargo.GroupVersion.String(), Kind: "Freight", Namespace: namespace, Name: name}
}
