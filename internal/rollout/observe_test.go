package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// The objects below are shaped as Kargo v1.11.2 writes them: Promotions
// renamed by its webhook to <stage>.<ulid>.<freight[:7]>, with its stage
// label, create-actor annotation and owner reference beside kargo-fleet's
// labels; Stages with their freight history and verification history.
const (
	obsFreight    = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
	obsOldFreight = "1a2b3c4d5e6f708192a3b4c5d6e7f80912345678"
	obsRollout    = "prod-9f8e7d6c5b"
)

// obsStages are the fleet's three target Stages, running the old Freight,
// healthy and verified.
const obsStages = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: prod.eu-1
  namespace: shop
  uid: 0b6c1f0e-6d4c-4bb1-9d53-2f4b8b1f2c11
  labels: {fleet.kargo-fleet.io/fleetstage: prod, fleet.kargo-fleet.io/role: target, fleet.kargo-fleet.io/target: eu-1}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: apps}
    sources: {stages: [prod-pilot]}
status:
  health: {status: Healthy}
  freightHistory:
  - id: 3a9d0c
    items:
      Warehouse/apps: {name: 1a2b3c4d5e6f708192a3b4c5d6e7f80912345678, origin: {kind: Warehouse, name: apps}}
    verificationHistory:
    - {id: 6f1e2d, phase: Successful, startTime: "2026-11-21T08:00:00Z", finishTime: "2026-11-21T08:02:00Z"}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: prod.eu-2
  namespace: shop
  labels: {fleet.kargo-fleet.io/fleetstage: prod, fleet.kargo-fleet.io/role: target, fleet.kargo-fleet.io/target: eu-2}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: apps}
    sources: {stages: [prod-canary]}
status:
  health: {status: Healthy}
  freightHistory:
  - id: 3a9d0c
    items:
      Warehouse/apps: {name: 1a2b3c4d5e6f708192a3b4c5d6e7f80912345678, origin: {kind: Warehouse, name: apps}}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: prod.us-1
  namespace: shop
  labels: {fleet.kargo-fleet.io/fleetstage: prod, fleet.kargo-fleet.io/role: target, fleet.kargo-fleet.io/target: us-1}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: apps}
    sources: {stages: [prod-canary]}
status:
  health: {status: Healthy}
  freightHistory:
  - id: 3a9d0c
    items:
      Warehouse/apps: {name: 1a2b3c4d5e6f708192a3b4c5d6e7f80912345678, origin: {kind: Warehouse, name: apps}}
`

// obsMine is a target Promotion of the rollout into prod.eu-1, as Kargo
// shows it once it succeeded.
const obsMine = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata:
  name: prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6
  namespace: shop
  creationTimestamp: "2026-11-22T09:58:30Z"
  labels:
    kargo.akuity.io/stage: prod.eu-1
    fleet.kargo-fleet.io/fleetstage: prod
    fleet.kargo-fleet.io/rollout: prod-9f8e7d6c5b
    fleet.kargo-fleet.io/wave: pilot
    fleet.kargo-fleet.io/target: eu-1
  annotations:
    kargo.akuity.io/create-actor: kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet-controller
  ownerReferences:
  - {apiVersion: kargo.akuity.io/v1alpha1, kind: Stage, name: prod.eu-1, uid: 0b6c1f0e-6d4c-4bb1-9d53-2f4b8b1f2c11}
spec:
  stage: prod.eu-1
  freight: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432
  steps:
  - {uses: http, as: deploy}
status:
  phase: Succeeded
  message: All steps completed
  startedAt: "2026-11-22T09:58:31Z"
  finishedAt: "2026-11-22T09:59:10Z"
  freight: {name: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432, origin: {kind: Warehouse, name: apps}}
`

// obsRecreatedUID is the UID of prod.eu-1 once deleted and re-created.
const obsRecreatedUID = "5d1a7c3e-2b9f-4e60-8a14-9c7b3f0d6e25"

// obsEU1Recreated is prod.eu-1 deleted and re-created by the FleetStage
// controller after obsMine succeeded into the Stage it replaced: a new UID,
// no freight history.
const obsEU1Recreated = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: prod.eu-1
  namespace: shop
  uid: 5d1a7c3e-2b9f-4e60-8a14-9c7b3f0d6e25
  creationTimestamp: "2026-11-22T09:59:40Z"
  labels: {fleet.kargo-fleet.io/fleetstage: prod, fleet.kargo-fleet.io/role: target, fleet.kargo-fleet.io/target: eu-1}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: apps}
    sources: {stages: [prod-pilot]}
`

// obsEU1OnFreight is prod.eu-1 once Kargo recorded the rollout's Freight,
// verification still running.
const obsEU1OnFreight = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: prod.eu-1
  namespace: shop
  labels: {fleet.kargo-fleet.io/fleetstage: prod, fleet.kargo-fleet.io/role: target, fleet.kargo-fleet.io/target: eu-1}
status:
  health: {status: Healthy}
  lastPromotion: {name: prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6}
  freightHistory:
  - id: 7c4e1b
    items:
      Warehouse/apps: {name: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432, origin: {kind: Warehouse, name: apps}}
    verificationHistory:
    - {id: 8a2b3c, phase: Running, startTime: "2026-11-22T09:59:11Z"}
  - id: 3a9d0c
    items:
      Warehouse/apps: {name: 1a2b3c4d5e6f708192a3b4c5d6e7f80912345678, origin: {kind: Warehouse, name: apps}}
    verificationHistory:
    - {id: 6f1e2d, phase: Successful}
`

// obsWavePromotion is a Promotion of the pilot wave Stage of the rollout's
// Freight, created after the rollout.
const obsWavePromotion = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata:
  name: prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6
  namespace: shop
  creationTimestamp: "2026-11-22T09:58:05Z"
  labels: {kargo.akuity.io/stage: prod-pilot}
  annotations: {kargo.akuity.io/create-actor: "kubernetes:alice"}
spec:
  stage: prod-pilot
  freight: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432
status:
  phase: Running
`

// kargoObjects decodes multi-document YAML into the Kargo objects a
// snapshot holds.
type kargoObjects struct {
	promotions []*kargo.Promotion
	stages     []*kargo.Stage
	freight    *kargo.Freight
}

func decodeKargo(t *testing.T, docs ...string) kargoObjects {
	t.Helper()
	var out kargoObjects
	for _, doc := range strings.Split(strings.Join(docs, "\n---\n"), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
		switch meta.Kind {
		case "Promotion":
			var p kargo.Promotion
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
			out.promotions = append(out.promotions, &p)
		case "Stage":
			var s kargo.Stage
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s))
			// A later document replaces an earlier Stage of the same name.
			replaced := false
			for i := range out.stages {
				if out.stages[i].Name == s.Name {
					out.stages[i], replaced = &s, true
				}
			}
			if !replaced {
				out.stages = append(out.stages, &s)
			}
		case "Freight":
			var f kargo.Freight
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &f))
			out.freight = &f
		default:
			t.Fatalf("unexpected kind %q in test objects", meta.Kind)
		}
	}
	return out
}

// obsPlan is the rollout's plan: pilot (eu-1) then canary (eu-2, us-1).
func obsPlan() *plan.WavePlan {
	return &plan.WavePlan{Waves: []plan.PlannedWave{
		{Name: "pilot", MaxConcurrent: 1, Members: []plan.Target{{ID: "eu-1", Name: "eu-1", Labels: map[string]string{"region": "eu"}}}},
		{Name: "canary", MaxConcurrent: 2, Members: []plan.Target{
			{ID: "eu-2", Name: "eu-2", Labels: map[string]string{"region": "eu"}},
			{ID: "us-1", Name: "us-1", Labels: map[string]string{"region": "us"}},
		}},
	}}
}

func obsSnapshot(t *testing.T, docs ...string) Snapshot {
	t.Helper()
	objs := decodeKargo(t, append([]string{obsStages}, docs...)...)
	// The FleetStage recorded every target Stage, as its controller does
	// when it creates them.
	recorded := map[string]types.UID{}
	for _, st := range objs.stages {
		if st.UID == "" {
			st.UID = types.UID("uid-" + st.Name)
		}
		recorded[st.Name] = st.UID
	}
	return Snapshot{
		Recorded: recorded,
		Rollout: &fleetv1alpha1.FleetRollout{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: obsRollout,
				CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 22, 9, 58, 0, 0, time.UTC))},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
				Freight: fleetv1alpha1.FreightReference{Name: obsFreight}},
		},
		FleetStage: testutil.MakeFleetStage("shop", "prod").Obj(),
		Plan:       obsPlan(),
		Promotions: objs.promotions,
		Stages:     objs.stages,
		Freight:    objs.freight,
	}
}

// freezeAllDay is a deny window that never ends.
var freezeAllDay = fleetv1alpha1.ChangeWindow{Name: "freeze", Type: fleetv1alpha1.WindowDeny,
	Schedule: "0 0 * * *", Duration: metav1.Duration{Duration: 24 * time.Hour}}

func TestObserve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// docs are Kargo objects beside the three target Stages; a Stage
		// here replaces the one of the same name.
		docs       []string
		mutate     func(*Snapshot)
		wantErr    string
		assertions func(*testing.T, *Observed)
	}{
		{
			name: "nothing promoted yet: every target on the old Freight, no Promotion",
			assertions: func(t *testing.T, o *Observed) {
				require.Len(t, o.Targets, 3)
				for id, tgt := range o.Targets {
					require.Nil(t, tgt.Promotion, id)
					require.False(t, tgt.OnFreight, id)
					require.False(t, tgt.StageGone, id)
					require.Equal(t, kargo.HealthHealthy, tgt.Health, id)
					require.Empty(t, tgt.Verification, "the verification of other Freight does not count")
				}
				require.Empty(t, o.Mine)
				require.Empty(t, o.RequestedWaves)
				require.Empty(t, o.WavePromoted)
			},
		},
		{
			name: "a Promotion renamed by Kargo's webhook is found by kargo-fleet's labels",
			docs: []string{obsMine},
			assertions: func(t *testing.T, o *Observed) {
				p := o.Targets["eu-1"].Promotion
				require.NotNil(t, p)
				require.Equal(t, "prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6", p.Name)
				require.Equal(t, kargo.PromotionSucceeded, p.Phase)
				require.True(t, p.FinishedAt.Equal(time.Date(2026, 11, 22, 9, 59, 10, 0, time.UTC)), p.FinishedAt)
				require.True(t, p.CreatedAt.Equal(time.Date(2026, 11, 22, 9, 58, 30, 0, time.UTC)), p.CreatedAt)
				require.Contains(t, o.Mine, "eu-1")
			},
		},
		{
			name: "a Succeeded Promotion whose Stage does not show the Freight yet is not on the Freight",
			docs: []string{obsMine},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.Equal(t, kargo.PromotionSucceeded, tgt.Promotion.Phase)
				require.False(t, tgt.OnFreight)
				require.Empty(t, tgt.Verification, "the old Freight's successful verification is not this Freight's")
				require.Equal(t, TargetInFlight, Judge(tgt, Limits{}, now).State)
			},
		},
		{
			name: "the Stage shows the Freight with its verification pending",
			docs: []string{obsMine, obsEU1OnFreight},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.True(t, tgt.OnFreight)
				require.Equal(t, kargo.VerificationRunning, tgt.Verification)
				require.Equal(t, TargetInFlight, Judge(tgt, Limits{}, now).State)
			},
		},
		{
			name: "the Stage shows the Freight, verified",
			docs: []string{obsMine, strings.Replace(obsEU1OnFreight, "{id: 8a2b3c, phase: Running,", "{id: 8a2b3c, phase: Successful,", 1)},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.Equal(t, kargo.VerificationSuccessful, tgt.Verification)
				require.Equal(t, TargetSucceeded, Judge(tgt, Limits{}, now).State)
			},
		},
		{
			name: "a failed verification of the Freight fails the target",
			docs: []string{obsMine, strings.Replace(obsEU1OnFreight, "{id: 8a2b3c, phase: Running,", "{id: 8a2b3c, phase: Failed, message: 'analysis failed',", 1)},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.Equal(t, kargo.VerificationFailed, tgt.Verification)
				j := Judge(tgt, Limits{}, now)
				require.Equal(t, TargetFailed, j.State)
				require.Equal(t, ReasonVerificationFailed, j.Reason)
			},
		},
		{
			name: "a failed verification of other Freight on the Stage does not count",
			docs: []string{obsMine, strings.Replace(firstDoc(obsStages), "phase: Successful", "phase: Failed", 1)},
			assertions: func(t *testing.T, o *Observed) {
				require.False(t, o.Targets["eu-1"].OnFreight)
				require.Empty(t, o.Targets["eu-1"].Verification)
			},
		},
		{
			name: "an unhealthy Stage",
			docs: []string{obsMine, strings.Replace(obsEU1OnFreight, "health: {status: Healthy}", "health: {status: Unhealthy, issues: [Deployment api is degraded]}", 1)},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, kargo.HealthUnhealthy, o.Targets["eu-1"].Health)
			},
		},
		{
			name: "of two Promotions of one target, the later created counts",
			docs: []string{obsMine, promotionOf("eu-1", "prod.eu-1.01jdx2aaaaaaaaaaaaaaaaaaaaaa.9f8e7d6", "2026-11-22T09:59:40Z", "Running", "")},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, "prod.eu-1.01jdx2aaaaaaaaaaaaaaaaaaaaaa.9f8e7d6", o.Targets["eu-1"].Promotion.Name,
					"created later, although its ULID sorts first")
				require.Equal(t, kargo.PromotionRunning, o.Targets["eu-1"].Promotion.Phase)
			},
		},
		{
			name: "of two Promotions created within one second, Kargo's ULID in the name orders them",
			docs: []string{
				promotionOf("eu-2", "prod.eu-2.01jdx4bbbbbbbbbbbbbbbbbbbbbb.9f8e7d6", "2026-11-22T09:59:00Z", "Errored", ""),
				promotionOf("eu-2", "prod.eu-2.01jdx4cccccccccccccccccccccc.9f8e7d6", "2026-11-22T09:59:00Z", "Pending", ""),
			},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, "prod.eu-2.01jdx4cccccccccccccccccccccc.9f8e7d6", o.Targets["eu-2"].Promotion.Name)
				require.Equal(t, kargo.PromotionPending, o.Targets["eu-2"].Promotion.Phase)
			},
		},
		{
			name: "Aborted after an abort request: the webhook rewrote the annotation to JSON",
			docs: []string{promotionOf("eu-2", "prod.eu-2.01jdx4dddddddddddddddddddddd.9f8e7d6", "2026-11-22T09:59:00Z", "Aborted",
				`kargo.akuity.io/abort: '{"action":"terminate","actor":"kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet-controller"}'`)},
			assertions: func(t *testing.T, o *Observed) {
				p := o.Targets["eu-2"].Promotion
				require.True(t, p.AbortRequested)
				require.Equal(t, kargo.PromotionAborted, p.Phase)
				require.Equal(t, ReasonPromotionAborted, Judge(o.Targets["eu-2"], Limits{}, now).Reason)
			},
		},
		{
			name: "Errored is not Aborted: Kargo's message is kept, no abort was asked",
			docs: []string{strings.Replace(promotionOf("eu-2", "prod.eu-2.01jdx4eeeeeeeeeeeeeeeeeeeeee.9f8e7d6", "2026-11-22T09:59:00Z", "Errored", ""),
				"status:\n  phase: Errored", "status:\n  phase: Errored\n  message: 'step \"deploy\" met error threshold of 1: dial tcp 10.0.0.7:8443: connect: connection refused'\n  finishedAt: \"2026-11-22T09:59:02Z\"", 1)},
			assertions: func(t *testing.T, o *Observed) {
				p := o.Targets["eu-2"].Promotion
				require.False(t, p.AbortRequested)
				require.Equal(t, kargo.PromotionErrored, p.Phase)
				require.Contains(t, p.Message, "error threshold")
				require.Equal(t, ReasonPromotionErrored, Judge(o.Targets["eu-2"], Limits{}, now).Reason)
			},
		},
		{
			name: "a refresh annotation on a Running Promotion changes nothing observed",
			docs: []string{promotionOf("eu-2", "prod.eu-2.01jdx4ffffffffffffffffffffff.9f8e7d6", "2026-11-22T09:59:00Z", "Running",
				`kargo.akuity.io/refresh: "2026-11-22T09:59:30.123456789Z"`)},
			assertions: func(t *testing.T, o *Observed) {
				p := o.Targets["eu-2"].Promotion
				require.Equal(t, kargo.PromotionRunning, p.Phase)
				require.False(t, p.AbortRequested)
			},
		},
		{
			name: "a Promotion of another rollout of the FleetStage keeps the Stage busy and counts against constraints",
			docs: []string{strings.Replace(promotionOf("us-1", "prod.us-1.01jdx5aaaaaaaaaaaaaaaaaaaaaa.1a2b3c4", "2026-11-22T09:50:00Z", "Running", ""),
				"fleet.kargo-fleet.io/rollout: prod-9f8e7d6c5b", "fleet.kargo-fleet.io/rollout: prod-1a2b3c4d5e", 1)},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.Targets["us-1"].StageBusy)
				require.Nil(t, o.Targets["us-1"].Promotion, "not this rollout's")
				require.Equal(t, []plan.InFlightTarget{{
					Target: plan.Target{ID: "us-1", Name: "us-1", Labels: map[string]string{"region": "us"}}, Rollout: "prod-1a2b3c4d5e",
				}}, o.OtherInFlight)
			},
		},
		{
			name: "a person's Promotion keeps the Stage busy but is no fleet rollout's",
			docs: []string{`
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata:
  name: prod.us-1.01jdx6aaaaaaaaaaaaaaaaaaaaaa.1a2b3c4
  namespace: shop
  creationTimestamp: "2026-11-22T09:57:00Z"
  labels: {kargo.akuity.io/stage: prod.us-1}
  annotations: {kargo.akuity.io/create-actor: "kubernetes:bob"}
spec: {stage: prod.us-1, freight: 1a2b3c4d5e6f708192a3b4c5d6e7f80912345678}
status: {phase: Pending}
`},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.Targets["us-1"].StageBusy)
				require.Empty(t, o.OtherInFlight)
			},
		},
		{
			name: "a finished Promotion of someone else does not keep the Stage busy",
			docs: []string{strings.Replace(promotionOf("us-1", "prod.us-1.01jdx5bbbbbbbbbbbbbbbbbbbbbb.1a2b3c4", "2026-11-22T09:50:00Z", "Succeeded", ""),
				"fleet.kargo-fleet.io/rollout: prod-9f8e7d6c5b", "fleet.kargo-fleet.io/rollout: prod-1a2b3c4d5e", 1)},
			assertions: func(t *testing.T, o *Observed) {
				require.False(t, o.Targets["us-1"].StageBusy)
				require.Empty(t, o.OtherInFlight)
			},
		},
		{
			name: "a target whose Stage is gone, and one being pruned, left the fleet",
			mutate: func(s *Snapshot) {
				s.Stages = s.Stages[:2] // prod.us-1 is gone
				s.Stages[1].Annotations = map[string]string{fleetv1alpha1.PruneAnnotation: "2026-11-22T09:59:00Z"}
			},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.Targets["us-1"].StageGone)
				require.True(t, o.Targets["eu-2"].StageGone)
				require.Equal(t, kargo.HealthHealthy, o.Targets["eu-2"].Health, "a Stage being pruned is still read")
				require.False(t, o.Targets["eu-1"].StageGone)
			},
		},
		{
			name: "a wave Stage Promotion of the Freight promotes the wave",
			docs: []string{obsWavePromotion},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.WavePromoted["pilot"])
				require.Empty(t, o.WaveGaveUp)
				require.False(t, o.Targets["eu-1"].StageBusy, "a wave Stage is not a target Stage")
			},
		},
		{
			name: "a wave Stage Promotion that Errored gave the wave up",
			docs: []string{strings.Replace(obsWavePromotion, "phase: Running", "phase: Errored", 1)},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.WavePromoted["pilot"])
				require.Equal(t, kargo.PromotionErrored, o.WaveGaveUp["pilot"])
			},
		},
		{
			name: "an Aborted wave Stage Promotion with a newer one alive did not give up",
			docs: []string{
				strings.Replace(obsWavePromotion, "phase: Running", "phase: Aborted", 1),
				strings.NewReplacer("01jdx3k0a1b2c3d4e5f6g7h8j9", "01jdx3z0a1b2c3d4e5f6g7h8j9", "09:58:05Z", "09:59:05Z").Replace(obsWavePromotion),
			},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.WavePromoted["pilot"])
				require.Empty(t, o.WaveGaveUp)
			},
		},
		{
			name: "wave Stage Promotions from before the rollout, of other Freight, or recording a rollback are not the rollout's",
			docs: []string{
				strings.Replace(obsWavePromotion, "09:58:05Z", "09:57:59Z", 1),
				strings.Replace(strings.ReplaceAll(obsWavePromotion, "prod-pilot", "prod-canary"),
					"freight: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432", "freight: "+obsOldFreight, 1),
				strings.Replace(strings.ReplaceAll(obsWavePromotion, "prod-pilot", "prod-canary"),
					`annotations: {kargo.akuity.io/create-actor: "kubernetes:alice"}`, `annotations: {kargo.akuity.io/rollback: "true"}`, 1),
			},
			assertions: func(t *testing.T, o *Observed) {
				require.Empty(t, o.WavePromoted)
				require.Empty(t, o.WaveGaveUp)
			},
		},
		{
			name: "a wave request names the Promotion that asked, whose phase is read",
			docs: []string{strings.Replace(obsWavePromotion, "phase: Running", "phase: Succeeded", 1)},
			mutate: func(s *Snapshot) {
				s.Rollout.Annotations = map[string]string{"wave.fleet.kargo-fleet.io/pilot": "prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"}
			},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, map[string]bool{"pilot": true}, o.RequestedWaves)
				require.Equal(t, map[string]string{"pilot": "prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"}, o.WaveRequests)
				require.Equal(t, kargo.PromotionSucceeded, o.RequestPhases["pilot"])
			},
		},
		{
			name: "a target Promotion created a moment ago and not listed yet stays expected",
			mutate: func(s *Snapshot) {
				s.Expected = map[string]bool{"eu-2": true, "eu-1": true}
			},
			docs: []string{obsMine},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, map[string]bool{"eu-2": true}, o.Expected)
				require.Equal(t, []string{"eu-1"}, o.Seen, "eu-1's Promotion is listed: its expectation is met")
			},
		},
		{
			name: "a wave Stage Promotion created a moment ago promotes the wave and overrides an earlier give-up",
			docs: []string{strings.Replace(obsWavePromotion, "phase: Running", "phase: Failed", 1)},
			mutate: func(s *Snapshot) {
				s.Expected = map[string]bool{WaveKey("canary"): true, WaveKey("pilot"): true}
			},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.WavePromoted["canary"])
				require.Equal(t, []string{WaveKey("pilot")}, o.Seen, "a pilot Promotion is listed")
				require.Equal(t, map[string]bool{WaveKey("canary"): true}, o.Expected)
				require.Equal(t, kargo.PromotionFailed, o.WaveGaveUp["pilot"])
			},
		},
		{
			name: "an expected wave Promotion whose earlier one gave up is promoted again",
			docs: []string{strings.Replace(obsWavePromotion, "phase: Running", "phase: Errored", 1)},
			mutate: func(s *Snapshot) {
				// The new one, listed: its expectation is met and the wave is alive.
				s.Expected = map[string]bool{WaveKey("pilot"): true}
				s.Promotions = append(s.Promotions, s.Promotions[0].DeepCopy())
				s.Promotions[1].Name = "prod-pilot.01jdx3z0a1b2c3d4e5f6g7h8j9.9f8e7d6"
				s.Promotions[1].Status.Phase = ""
			},
			assertions: func(t *testing.T, o *Observed) {
				require.True(t, o.WavePromoted["pilot"])
				require.Empty(t, o.WaveGaveUp, "a Promotion Kargo has not picked up yet is alive")
			},
		},
		{
			name: "Kargo's refusal counts while the target has no Promotion",
			docs: []string{obsMine},
			mutate: func(s *Snapshot) {
				at := time.Date(2026, 11, 22, 9, 59, 0, 0, time.UTC)
				s.Refused = map[string]Refusal{
					"eu-1": {Since: at, Message: "Freight is not available to this Stage"},
					"eu-2": {Since: at, Message: "Freight is not available to this Stage"},
				}
			},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, time.Date(2026, 11, 22, 9, 59, 0, 0, time.UTC), o.Targets["eu-2"].RefusedSince)
				require.Equal(t, "Freight is not available to this Stage", o.Targets["eu-2"].RefusedMessage)
				require.True(t, o.Targets["eu-1"].RefusedSince.IsZero(), "a Promotion was created since")
			},
		},
		{
			name: "approvals of the Freight for wave Stages",
			docs: []string{`
apiVersion: kargo.akuity.io/v1alpha1
kind: Freight
metadata: {name: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432, namespace: shop}
alias: wonky-wombat
origin: {kind: Warehouse, name: apps}
status:
  approvedFor:
    prod-canary: {approvedAt: "2026-11-22T09:40:00Z"}
    prod.eu-1: {approvedAt: "2026-11-22T09:40:00Z"}
  verifiedIn:
    prod-pilot: {verifiedAt: "2026-11-22T09:30:00Z"}
`},
			assertions: func(t *testing.T, o *Observed) {
				require.Equal(t, map[string]bool{"canary": true}, o.ApprovedWaves, "verifiedIn is no approval; a target Stage is no wave")
			},
		},
		{
			name: "a rollback reads no approvals and takes the rollback concurrency",
			docs: []string{`
apiVersion: kargo.akuity.io/v1alpha1
kind: Freight
metadata: {name: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432, namespace: shop}
origin: {kind: Warehouse, name: apps}
status:
  approvedFor: {prod-canary: {}}
`},
			mutate: func(s *Snapshot) {
				s.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback
				s.Rollout.Spec.RollbackOf = "prod-0a0b0c0d0e"
				s.FleetStage.Spec.Policy.Rollback = fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic, MaxConcurrent: testutil.Percent("50%")}
			},
			assertions: func(t *testing.T, o *Observed) {
				require.Empty(t, o.ApprovedWaves)
				require.Equal(t, 2, o.RollbackMaxConcurrent, "50% of 3 targets, rounded up")
			},
		},
		{
			name: "a change window holds a forward rollout back",
			mutate: func(s *Snapshot) {
				s.FleetStage.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{freezeAllDay}
				s.Rollout.Annotations = map[string]string{"wave.fleet.kargo-fleet.io/pilot": "prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"}
			},
			assertions: func(t *testing.T, o *Observed) {
				d := Decide(o.Observation)
				require.Empty(t, d.Start, "inside a deny window nothing starts")
				require.Equal(t, fleetv1alpha1.RolloutProgressing, d.Phase)
			},
		},
		{
			name: "a change window does not hold a rollback back",
			mutate: func(s *Snapshot) {
				s.FleetStage.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{freezeAllDay}
				s.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback
				s.Rollout.Spec.RollbackOf = "prod-0a0b0c0d0e"
			},
			assertions: func(t *testing.T, o *Observed) {
				d := Decide(o.Observation)
				require.Equal(t, []string{"eu-1"}, startIDs(d), "a rollback ignores change windows")
			},
		},
		{
			name: "a Stage re-created after its Promotion succeeded is pending again, for the new Stage",
			docs: []string{obsMine, obsEU1Recreated},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.Nil(t, tgt.Promotion, "the Promotion was made for the deleted Stage")
				require.Equal(t, "prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6", tgt.Recreated)
				require.Equal(t, types.UID(obsRecreatedUID), tgt.StageUID)
				require.NotContains(t, o.Mine, "eu-1")
				require.Equal(t, TargetPending, Judge(tgt, Limits{ProgressDeadline: time.Minute}, now.Add(time.Hour)).State,
					"no progress deadline runs for a Promotion of another Stage")
				o.Plan.Waves[0].ProgressDeadline = time.Minute
				o.RequestedWaves["pilot"] = true
				d := Decide(o.Observation)
				require.Equal(t, []Start{{Target: o.Plan.Waves[0].Members[0], Wave: "pilot", StageUID: obsRecreatedUID}}, d.Start,
					"the new Stage is promoted, and the Promotion records its UID")
			},
		},
		{
			name: "a re-created Stage whose own Promotion exists is not promoted twice",
			docs: []string{obsMine, obsEU1Recreated,
				promotionOf("eu-1", "prod.eu-1.01jdx4a0a1b2c3d4e5f6g7h8j9.9f8e7d6", "2026-11-22T09:59:50Z", "Running",
					"fleet.kargo-fleet.io/stage-uid: "+obsRecreatedUID)},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.NotNil(t, tgt.Promotion)
				require.Equal(t, "prod.eu-1.01jdx4a0a1b2c3d4e5f6g7h8j9.9f8e7d6", tgt.Promotion.Name)
				require.Empty(t, tgt.Recreated)
				require.Equal(t, TargetInFlight, Judge(tgt, Limits{}, now).State)
				o.RequestedWaves["pilot"] = true
				require.Empty(t, Decide(o.Observation).Start)
			},
		},
		{
			name:       "a Promotion made for the Stage that still exists stays in flight",
			docs:       []string{obsMine, strings.Replace(obsEU1Recreated, obsRecreatedUID, "0b6c1f0e-6d4c-4bb1-9d53-2f4b8b1f2c11", 1)},
			assertions: keepsPromotion(TargetInFlight),
		},
		{
			name:       "a re-created Stage whose Promotion failed stays failed",
			docs:       []string{strings.Replace(obsMine, "phase: Succeeded", "phase: Failed", 1), obsEU1Recreated},
			assertions: keepsPromotion(TargetFailed),
		},
		{
			name: "a Stage under a target's name that the FleetStage did not record is never promoted",
			mutate: func(s *Snapshot) {
				delete(s.Recorded, "prod.eu-1")
				s.Recorded["prod.eu-2"] = "uid-of-a-deleted-stage"
				s.Rollout.Annotations = map[string]string{"wave.fleet.kargo-fleet.io/pilot": "prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6",
					"wave.fleet.kargo-fleet.io/canary": "prod-canary.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"}
			},
			assertions: func(t *testing.T, o *Observed) {
				for _, id := range []string{"eu-1", "eu-2"} {
					tgt := o.Targets[id]
					require.True(t, tgt.StageUnrecorded, id)
					require.False(t, tgt.StageGone, "an unrecorded Stage does not make the target leave the fleet")
					require.Empty(t, tgt.Health, "nothing is read from a Stage the FleetStage did not record")
					require.Equal(t, TargetPending, Judge(tgt, Limits{}, now).State)
				}
				require.False(t, o.Targets["us-1"].StageUnrecorded)
				require.Empty(t, Decide(o.Observation).Start, "the pilot's one target Stage is not recorded: nothing starts")
				o.Targets["eu-1"] = TargetObservation{Health: kargo.HealthHealthy}
				require.Equal(t, []string{"eu-1"}, startIDs(Decide(o.Observation)), "a recorded Stage is promoted")
			},
		},
		{
			name: "a taken Stage name fails its target after the progress deadline and lets its wave go on",
			mutate: func(s *Snapshot) {
				delete(s.Recorded, "prod.eu-1")
				s.TakenSince = map[string]time.Time{"eu-1": now.Add(-time.Hour)}
				s.Plan.Waves[0].ProgressDeadline = 30 * time.Minute
			},
			assertions: func(t *testing.T, o *Observed) {
				tgt := o.Targets["eu-1"]
				require.True(t, tgt.StageUnrecorded)
				require.Equal(t, "prod.eu-1", tgt.StageName)
				require.Equal(t, now.Add(-time.Hour), tgt.TakenSince)
				j := Judge(tgt, Limits{ProgressDeadline: 30 * time.Minute}, now)
				require.Equal(t, TargetFailed, j.State)
				require.Equal(t, ReasonStageNameTaken, j.Reason)
				d := Decide(o.Observation)
				require.Equal(t, int32(1), d.Waves[0].Failed, "the taken target is counted failed in its wave")
				require.Len(t, d.Failures, 1)
				require.Equal(t, ReasonStageNameTaken, d.Failures[0].Reason)
			},
		},
		{
			name: "an invalid policy is an error",
			mutate: func(s *Snapshot) {
				s.FleetStage.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{{Name: "bad", Type: fleetv1alpha1.WindowDeny, Schedule: "every day"}}
			},
			wantErr: `error compiling the policy of FleetStage "prod"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := obsSnapshot(t, tt.docs...)
			if tt.mutate != nil {
				tt.mutate(&s)
			}
			got, err := Observe(s, now)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, now, got.Now)
			require.Equal(t, "prod", got.FleetStage)
			tt.assertions(t, got)
		})
	}
}

// keepsPromotion asserts that eu-1 keeps its Promotion of the rollout (its
// Stage is not taken as re-created) and is judged want.
func keepsPromotion(want TargetState) func(*testing.T, *Observed) {
	return func(t *testing.T, o *Observed) {
		tgt := o.Targets["eu-1"]
		require.NotNil(t, tgt.Promotion)
		require.Empty(t, tgt.Recreated)
		require.Equal(t, want, Judge(tgt, Limits{}, now).State)
	}
}

// promotionOf is a Promotion of the rollout into a target's Stage, named and
// labelled as Kargo and kargo-fleet leave it; annotations is one YAML
// mapping entry or empty.
func promotionOf(target, name, created, phase, annotation string) string {
	annotations := "kargo.akuity.io/create-actor: kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet-controller"
	if annotation != "" {
		annotations += "\n    " + annotation
	}
	return `
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata:
  name: ` + name + `
  namespace: shop
  creationTimestamp: "` + created + `"
  labels:
    kargo.akuity.io/stage: prod.` + target + `
    fleet.kargo-fleet.io/fleetstage: prod
    fleet.kargo-fleet.io/rollout: prod-9f8e7d6c5b
    fleet.kargo-fleet.io/target: ` + target + `
  annotations:
    ` + annotations + `
spec:
  stage: prod.` + target + `
  freight: 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432
status:
  phase: ` + phase + `
`
}

// firstDoc returns the first document of a multi-document YAML string.
func firstDoc(docs string) string {
	first, _, _ := strings.Cut(docs, "---")
	return first
}
