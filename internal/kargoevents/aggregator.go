package kargoevents

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Aggregator records core/v1 Events about Kargo objects in the background,
// through client-go's Event correlator, for callers that must neither wait
// for an Event nor let a burst of them reach etcd: the admission guard for
// Kargo Promotions, which a user clicking Promote 50 times asks 50 times.
//
// The correlator (client-go tools/record, default options) turns repeats
// of one Event (same object, reason and message) into one Event whose
// count and last-seen time go up; combines more than 10 Events of one
// object and reason with different messages within 10 minutes into one
// "(combined from similar events)" Event; and lets at most 25 writes per
// object through at once, then one every 5 minutes, dropping the rest.
// Recording never blocks: an Event that finds the queue full (1,000) is
// dropped. Failed writes are retried a few times, then dropped, and logged.
type Aggregator struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// NewAggregator returns an Aggregator writing Events with events as
// component; Start runs it.
func NewAggregator(events typedcorev1.EventsGetter, scheme *runtime.Scheme, component string) *Aggregator {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	return &Aggregator{broadcaster: b, recorder: b.NewRecorder(scheme, corev1.EventSource{Component: component})}
}

// Eventf queues an Event about the Kargo object ref with the annotations
// Kargo puts on its own Events; it returns at once.
func (a *Aggregator) Eventf(ref *corev1.ObjectReference, eventtype, reason, format string, args ...any) {
	if _, ok := KargoObject(ref); !ok {
		return
	}
	a.recorder.AnnotatedEventf(ref, annotations(ref), eventtype, reason, "%s",
		strutil.Ellipsis(fmt.Sprintf(format, args...), maxMessage))
}

// Start waits for ctx to end, then stops recording. It makes the
// Aggregator a manager Runnable.
func (a *Aggregator) Start(ctx context.Context) error {
	<-ctx.Done()
	a.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection says the Aggregator runs on every replica: each one
// answers admission requests.
func (a *Aggregator) NeedLeaderElection() bool { return false }
