//go:build integration

package privilege_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
)

// startWriter runs an audit writer as the controller's user until the test
// ends.
func startWriter(t *testing.T, keep int) *auditstore.Writer {
	t.Helper()
	w := auditstore.NewWriter(controller, controller, clock.RealClock{}, keep, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

func decision(ns, fleetStage string, i int, key string) audit.Entry {
	return audit.Entry{Namespace: ns, FleetStage: fleetStage, AuditRecord: fleetv1alpha1.AuditRecord{
		Time: metav1.NewMicroTime(time.Now()), Action: "WavePassed", Type: "Normal", Actor: audit.ControllerActor,
		Rollout: "prod-v2", Freight: "f2", Message: fmt.Sprintf("decision %d", i), Key: key}}
}

// TestAuditTrailsAreTheControllersAlone: two writers (two replicas of the
// controller, as its user under the chart's RBAC and admission policies)
// append to one FleetStage's trail at once; the trail holds each decision
// once, in one unbroken chain that reaches the head in the FleetStage's
// status; retention deletes the oldest segments only after recording it;
// and nobody else, cluster administrators included, may change or delete a
// segment, while the controller may only append.
func TestAuditTrailsAreTheControllersAlone(t *testing.T) {
	ctx := context.Background()
	ns := "audit-trail"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	fs := &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind: fleetv1alpha1.InlineSource, Inline: []fleetv1alpha1.InlineTarget{{Name: "a"}},
			}}},
			Waves: []fleetv1alpha1.Wave{{Name: "all"}},
		},
	}
	require.NoError(t, env.Client.Create(ctx, fs))

	a, b := startWriter(t, 2), startWriter(t, 2)
	flush, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The first segment is created, then appended to.
	for i := range 2 {
		a.Record(decision(ns, "prod", -1-i, ""))
		a.Flush(flush)
	}
	first := &fleetv1alpha1.FleetAuditSegment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.SegmentName("prod", 1)}, first))
	require.Len(t, first.Spec.Records, 2)
	const n = 700
	var wg sync.WaitGroup
	for _, w := range []*auditstore.Writer{a, b} {
		wg.Go(func() {
			for i := range n / 2 {
				w.Record(decision(ns, "prod", i, ""))
				if i%50 == 0 {
					// One approval seen by both replicas is recorded once.
					w.Record(decision(ns, "prod", i, fmt.Sprintf("approval.%d", i)))
				}
			}
		})
	}
	wg.Wait()
	// A batch that lost a conflict six times in a row waits for the next
	// flush: flush until every decision is in.
	var segs []fleetv1alpha1.FleetAuditSegment
	var rep audit.Report
	keyed := map[string]int{}
	retention, written := 0, 0
	require.Eventually(t, func() bool {
		a.Flush(flush)
		b.Flush(flush)
		var err error
		if segs, err = auditstore.Read(ctx, env.Client, ns, "prod"); err != nil {
			return false
		}
		rep = audit.Verify(segs, nil)
		keyed, retention = map[string]int{}, 0
		for _, e := range audit.Entries(segs) {
			if e.Action == audit.RetentionAction {
				retention++
				continue
			}
			if e.Key != "" {
				keyed[e.Key]++
			}
		}
		written = int(rep.Last) - retention
		return written >= 2+n+7
	}, time.Minute, 200*time.Millisecond, "decisions written: %d of %d", written, 2+n+7)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), fs))
	require.NotNil(t, fs.Status.Audit, "the head is in the FleetStage's status")
	rep = audit.Verify(segs, fs.Status.Audit)
	require.True(t, rep.OK(), rep.Problems)
	require.Equal(t, 2+n+7, written, "every decision once, each approval once")
	for k, c := range keyed {
		require.Equal(t, 1, c, "approval %s recorded once", k)
	}
	require.Len(t, segs, 2, "retention keeps 2 segments")
	require.Positive(t, retention, "the deleted segments are recorded")
	require.Greater(t, rep.First, int64(1))

	// Nobody but the controller writes a segment: not even an administrator.
	seg := segs[len(segs)-1].DeepCopy()
	seg.Spec.Records[0].Message = "nothing happened"
	err := env.Client.Update(ctx, seg)
	require.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "admin update: %v", err)
	require.ErrorContains(t, err, "only kargo-fleet's controller")
	require.ErrorContains(t, env.Client.Delete(ctx, &segs[0]), "only kargo-fleet's controller")
	forged := &fleetv1alpha1.FleetAuditSegment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-audit-9999999999"},
		Spec: fleetv1alpha1.FleetAuditSegmentSpec{FleetStage: "prod", First: 9999999999}}
	require.ErrorContains(t, env.Client.Create(ctx, forged), "only kargo-fleet's controller")

	// The controller itself only appends.
	cut := segs[len(segs)-1].DeepCopy()
	cut.Spec.Records = cut.Spec.Records[:len(cut.Spec.Records)-1]
	require.ErrorContains(t, controller.Update(ctx, cut), "records are only appended")
	moved := segs[len(segs)-1].DeepCopy()
	moved.Spec.First++
	require.ErrorContains(t, controller.Update(ctx, moved), "fleetStage, first and previousHash never change")
}
