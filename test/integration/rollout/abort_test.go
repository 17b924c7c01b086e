//go:build integration

package rollout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// blockingServer answers every request with {"state":"done"} once released,
// and counts the requests waiting.
type blockingServer struct {
	*httptest.Server
	mu      sync.Mutex
	waiting int
	release chan struct{}
	once    sync.Once
}

func newBlockingServer(t *testing.T) *blockingServer {
	s := &blockingServer{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.waiting++
		s.mu.Unlock()
		<-s.release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"done"}`))
	}))
	t.Cleanup(func() { s.open(); s.Close() })
	return s
}

func (s *blockingServer) open() { s.once.Do(func() { close(s.release) }) }

func (s *blockingServer) inRequest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// blockingFleet is a fleet of three targets, two promoted at a time, whose
// per-target step is an http call to srv: it stays inside its request
// until srv opens.
func blockingFleet(t *testing.T, ns string, srv *blockingServer) *fleet {
	t.Helper()
	return newFleet(t, ns, fleetSpec{
		targets: inline("c", 3, nil, nil),
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(2)}},
		steps: []kargo.PromotionStep{{Uses: "http", As: "deploy", Config: &apiextensionsv1.JSON{Raw: []byte(`{
			"method": "POST", "url": "` + srv.URL + `", "timeout": "60s",
			"successExpression": "response.status == 200 && response.body.state == 'done'"}`)}}},
	})
}

// TestAbortedRolloutSettlesWhenPromotionsInsideARequestFinish: Kargo does
// not stop a step inside its request when a Promotion is aborted, so target
// Promotions of an aborted rollout may still finish Succeeded. The rollout
// stays Aborted, but its counts follow them until nothing is in flight, its
// message says what finished after the abort, and its Event names who
// aborted it.
func TestAbortedRolloutSettlesWhenPromotionsInsideARequestFinish(t *testing.T) {
	srv := newBlockingServer(t)
	f := blockingFleet(t, "abort-inside", srv)
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
	require.Eventually(t, func() bool { return srv.inRequest() == 2 }, wait, tick, "two target Promotions are inside their request")

	// As kargo-fleet abort does it: the intent and who set it, in one write.
	patch := client.MergeFrom(ro.DeepCopy())
	ro.Spec.Intent = fleetv1alpha1.IntentAbort
	ro.Annotations[fleetv1alpha1.IntentActorAnnotation] = "kubernetes:alice"
	require.NoError(t, env.Client.Patch(context.Background(), ro, patch))
	aborted := f.rollout(f.good, fleetv1alpha1.RolloutAborted)
	require.EqualValues(t, 2, aborted.Status.Waves[0].InFlight, aborted.Status.Message)
	require.Contains(t, aborted.Status.Message, "2 target(s) still in flight")
	// The abort annotations reach Kargo while the requests are open.
	require.Eventually(t, func() bool {
		list := &kargo.PromotionList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
			client.MatchingLabels{fleetv1alpha1.RolloutLabel: aborted.Name}))
		n := 0
		for _, p := range list.Items {
			if p.Annotations[kargo.AbortAnnotation] != "" {
				n++
			}
		}
		return n == 2
	}, wait, tick, "the in-flight target Promotions are asked to abort")

	srv.open()
	var settled *fleetv1alpha1.FleetRollout
	require.Eventually(t, func() bool {
		settled = f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return settled != nil && settled.Status.Waves[0].InFlight == 0
	}, wait, tick, "the aborted rollout's counts settle (last: %s)", describe(&settled))
	require.Equal(t, fleetv1alpha1.RolloutAborted, settled.Status.Phase, "an aborted rollout stays aborted")
	w := settled.Status.Waves[0]
	require.EqualValues(t, 2, w.Succeeded, "both Promotions inside their request finished Succeeded")
	require.EqualValues(t, 1, w.Pending, "the third target never started")
	require.Contains(t, settled.Status.Message, "2 target Promotion(s) finished after the abort (2 succeeded, 0 did not)")
	require.Equal(t, 2, countPromotions(t, f, settled.Name), "an aborted rollout starts nothing")

	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
		for _, e := range list.Items {
			if e.Regarding.Name == settled.Name && e.Reason == "RolloutAborted" {
				return strings.Contains(e.Note, "by kubernetes:alice")
			}
		}
		return false
	}, 10*time.Second, tick, "the RolloutAborted Event names who aborted")
}

// TestDeletingARunningRolloutAbortsIt: a delete is an abort. The
// controller's finalizer asks Kargo to abort the rollout's running target
// Promotions and records the rollout as Aborted in the FleetStage's
// history; the wave Promotion whose step started it fails saying so, and
// the rollout is never created again under its name (the step server used
// to re-create it on the next poll).
func TestDeletingARunningRolloutAbortsIt(t *testing.T) {
	srv := newBlockingServer(t)
	f := blockingFleet(t, "delete-running", srv)
	ctx := context.Background()
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
	require.Contains(t, ro.Finalizers, fleetv1alpha1.AbortOnDeleteFinalizer, "an unfinished rollout carries the finalizer")
	require.Eventually(t, func() bool { return srv.inRequest() == 2 }, wait, tick, "two target Promotions are inside their request")
	wavePromotion := f.latestWavePromotion("all", f.good)
	require.NotNil(t, wavePromotion)

	require.NoError(t, env.Client.Delete(ctx, ro))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ro), &fleetv1alpha1.FleetRollout{}))
	}, wait, tick, "the deletion finishes")
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(ctx, list, client.InNamespace(f.ns), client.MatchingLabels{fleetv1alpha1.RolloutLabel: ro.Name}))
	require.Len(t, list.Items, 2)
	for _, p := range list.Items {
		require.NotEmpty(t, p.Annotations[kargo.AbortAnnotation], "running target Promotion %s is asked to abort", p.Name)
	}
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(ctx, f.fleetKey, fs))
	rec := fleetrollout.Deleted(fs, ro.Name)
	require.NotNil(t, rec, "the deleted rollout is recorded in the FleetStage's history")
	require.Equal(t, fleetv1alpha1.RolloutAborted, rec.Phase)
	require.NotEqual(t, ro.Name, fs.Status.CurrentRollout)

	var wp kargo.Promotion
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(wavePromotion), &wp) == nil && wp.Status.Phase.IsTerminal()
	}, wait, tick, "the wave Promotion that started the rollout ends")
	require.Equal(t, kargo.PromotionFailed, wp.Status.Phase)
	require.Contains(t, wp.Status.Message, "was deleted", wp.Status.Message)
	require.Contains(t, wp.Status.Message, "a deleted rollout does not start again")

	srv.open()
	time.Sleep(2 * time.Second)
	require.Nil(t, f.findRollout(f.good, fleetv1alpha1.DirectionForward), "the rollout is not created again")
	require.Equal(t, 2, countPromotions(t, f, ro.Name), "nothing more started for it")

	// Admission refuses the name too, even to the controller.
	again := ro.DeepCopy()
	again.ResourceVersion, again.UID, again.Finalizers = "", "", nil
	c, err := client.New(env.ControllerConfig(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	require.ErrorContains(t, c.Create(ctx, again), "is gone (recorded as Aborted in the FleetStage's history)")
}

// TestRolloutWaitingOnAnAbortedRolloutsTargetsGoesOnWhenTheyFinish: a
// rollout whose targets are in flight for another, aborted rollout waits for
// them (Kargo runs one Promotion per Stage). When those Promotions finish
// (inside their request, or once the shard controller that aborts them is
// back), the waiting rollout promotes the freed targets at once, without
// waiting for a resync: a finished target Promotion wakes every open
// rollout of its fleet.
func TestRolloutWaitingOnAnAbortedRolloutsTargetsGoesOnWhenTheyFinish(t *testing.T) {
	srv := newBlockingServer(t)
	f := newFleet(t, "abort-frees", fleetSpec{
		targets: inline("c", 2, nil, nil),
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(2)}},
		policy:  fleetv1alpha1.FleetPolicy{NewerFreight: fleetv1alpha1.SupersedeReplace},
		steps: []kargo.PromotionStep{{Uses: "http", As: "deploy", Config: &apiextensionsv1.JSON{Raw: []byte(`{
			"method": "POST", "url": "` + srv.URL + `", "timeout": "60s",
			"successExpression": "response.status == 200 && response.body.state == 'done'"}`)}}},
	})
	f.ship(f.good)
	first := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
	require.Eventually(t, func() bool { return srv.inRequest() == 2 }, wait, tick, "both target Promotions are inside their request")
	patch := client.MergeFrom(first.DeepCopy())
	first.Spec.Intent = fleetv1alpha1.IntentAbort
	require.NoError(t, env.Client.Patch(context.Background(), first, patch))
	f.rollout(f.good, fleetv1alpha1.RolloutAborted)

	f.ship(f.bad)
	var next *fleetv1alpha1.FleetRollout
	require.Eventually(t, func() bool {
		next = f.findRollout(f.bad, fleetv1alpha1.DirectionForward)
		return next != nil && len(next.Status.Waves) == 1 && strings.Contains(next.Status.Waves[0].Waiting, "in flight for another rollout")
	}, wait, tick, "the next rollout waits for the aborted rollout's targets (last: %s)", describe(&next))
	require.Zero(t, countPromotions(t, f, next.Name), "it starts nothing while both Stages are busy")

	srv.open()
	require.Eventually(t, func() bool { return countPromotions(t, f, next.Name) == 2 }, 10*time.Second, tick,
		"the freed targets are promoted as soon as the aborted rollout's Promotions finish")
	f.rollout(f.bad, fleetv1alpha1.RolloutSucceeded)
}
