package drift

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
)

func TestClassifyApplication(t *testing.T) {
	t.Parallel()
	const stage = "prod.eu-1"
	fleetPromo := stage + ".01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"
	glassPromo := stage + ".01jdx4k0a1b2c3d4e5f6g7h8j9.1a2b3c4"
	botPromo := stage + ".01jdx4k0a1b2c3d4e5f6g7h8j9.2b3c4d5"
	otherPromo := "hotfix.01jdx5k0a1b2c3d4e5f6g7h8j9.5d6e7f8"
	// The create-actors Kargo's webhook wrote on the Promotions that exist.
	actors := map[string]string{fleetPromo: "", glassPromo: "kubernetes:oncall",
		botPromo: "kubernetes:system:serviceaccount:ops:oncall-bot", otherPromo: "kubernetes:bob"}
	kargoSynced := func(promotion, by string) *argocd.OperationState {
		return &argocd.OperationState{Phase: argocd.OperationSucceeded, SyncResult: &argocd.SyncOperationResult{Revision: "abc123"},
			Operation: argocd.Operation{InitiatedBy: argocd.OperationInitiator{Username: by},
				Info: []argocd.Info{{Name: "Reason", Value: "Promotion triggered a sync"}, {Name: argocd.PromotionInfoKey, Value: promotion}}}}
	}
	healthy := argocd.ApplicationStatus{Sync: argocd.SyncStatus{Status: argocd.SyncStatusSynced, Revision: "abc123"},
		Health: argocd.HealthStatus{Status: argocd.HealthHealthy}}
	with := func(mutate func(*argocd.ApplicationStatus)) argocd.ApplicationStatus {
		st := healthy
		st.OperationState = kargoSynced(fleetPromo, argocd.KargoInitiator)
		mutate(&st)
		return st
	}
	tests := []struct {
		name       string
		status     argocd.ApplicationStatus
		operation  *argocd.Operation
		wantClass  Class
		wantReason string
		wantIn     string
	}{
		{name: "the fleet's own sync, Synced and Healthy", status: with(func(*argocd.ApplicationStatus) {})},
		{name: "never synced, Synced and Healthy", status: healthy},
		{name: "a sync the fleet started still running", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState.Phase = argocd.OperationRunning
			st.Sync.Status = argocd.SyncStatusOutOfSync
		})},
		{name: "a sync asked for and not picked up yet", status: with(func(st *argocd.ApplicationStatus) {
			st.Health.Status = argocd.HealthDegraded
		}), operation: &argocd.Operation{InitiatedBy: argocd.OperationInitiator{Username: "alice"}}},
		{name: "a manual sync in Argo CD", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = &argocd.OperationState{Phase: argocd.OperationSucceeded,
				Operation:  argocd.Operation{InitiatedBy: argocd.OperationInitiator{Username: "alice"}},
				SyncResult: &argocd.SyncOperationResult{Revision: "old999"}}
		}), wantClass: ClassForeign, wantReason: ReasonManualSync, wantIn: "alice synced revision old999"},
		{name: "Argo CD's automated sync", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = &argocd.OperationState{Phase: argocd.OperationSucceeded,
				Operation:  argocd.Operation{InitiatedBy: argocd.OperationInitiator{Automated: true}},
				SyncResult: &argocd.SyncOperationResult{Revisions: []string{"r1", "r2"}}}
		}), wantClass: ClassForeign, wantReason: ReasonAutomatedSync, wantIn: "revision r1,r2"},
		// Kargo starts a sync as its Promotion's create-actor without the
		// "<kind>:" prefix when the value holds one colon.
		{name: "another Kargo Stage's argocd-update", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced(otherPromo, "bob")
		}), wantClass: ClassForeign, wantReason: ReasonOtherStage, wantIn: "of Stage hotfix"},
		{name: "a break-glass Promotion of the target's Stage", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced(glassPromo, "oncall")
		}), wantClass: ClassIntended, wantReason: ReasonBreakGlass, wantIn: "by oncall"},
		{name: "a break-glass Promotion by a ServiceAccount, whose actor Kargo keeps whole", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced(botPromo, "kubernetes:system:serviceaccount:ops:oncall-bot")
		}), wantClass: ClassIntended, wantReason: ReasonBreakGlass, wantIn: "by kubernetes:system:serviceaccount:ops:oncall-bot"},
		{name: "a user's sync that kept a break-glass Promotion's info", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced(glassPromo, "kubernetes:oncall")
		}), wantClass: ClassForeign, wantReason: ReasonManualSync, wantIn: "kubernetes:oncall synced"},
		{name: "a user named like the Promotion's actor's kind", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced(otherPromo, "kubernetes")
		}), wantClass: ClassForeign, wantReason: ReasonManualSync},
		{name: "a sync of a Promotion that is gone, by a one-colon actor", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced("hotfix.01jdx6k0a1b2c3d4e5f6g7h8j9.0a0b0c0", "carol")
		}), wantClass: ClassForeign, wantReason: ReasonManualSync, wantIn: "carol synced"},
		{name: "a sync of a Promotion that is gone, by a ServiceAccount", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState = kargoSynced("hotfix.01jdx6k0a1b2c3d4e5f6g7h8j9.0a0b0c0", "kubernetes:system:serviceaccount:ci:deployer")
		}), wantClass: ClassForeign, wantReason: ReasonOtherStage},
		{name: "a live resource edited: OutOfSync", status: with(func(st *argocd.ApplicationStatus) {
			st.Sync.Status = argocd.SyncStatusOutOfSync
		}), wantClass: ClassForeign, wantReason: ReasonOutOfSync, wantIn: "differ from revision abc123"},
		{name: "Degraded", status: with(func(st *argocd.ApplicationStatus) {
			st.Health = argocd.HealthStatus{Status: argocd.HealthDegraded, Message: "Deployment exceeded its progress deadline"}
		}), wantClass: ClassBroken, wantReason: ReasonDegraded, wantIn: "progress deadline"},
		{name: "Missing", status: with(func(st *argocd.ApplicationStatus) {
			st.Health = argocd.HealthStatus{Status: argocd.HealthMissing}
		}), wantClass: ClassBroken, wantReason: ReasonMissing},
		{name: "a manual sync that broke it is foreign first", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState.Operation.Info = nil
			st.OperationState.Operation.InitiatedBy.Username = "alice"
			st.Health.Status = argocd.HealthDegraded
		}), wantClass: ClassForeign, wantReason: ReasonManualSync},
		{name: "a fleet sync that failed is the rollout's to judge", status: with(func(st *argocd.ApplicationStatus) {
			st.OperationState.Phase = argocd.OperationFailed
			st.OperationState.Message = "one or more objects failed to apply"
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app := &argocd.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "guestbook-eu-1"},
				Operation: tt.operation, Status: tt.status}
			d, ok := ClassifyApplication(ObservedApplication{Target: "eu-1", Stage: stage, App: app,
				Origins: map[string]Origin{fleetPromo: OriginFleet, glassPromo: OriginBreakGlass, botPromo: OriginBreakGlass},
				ActorOf: func(p string) (string, bool) { a, ok := actors[p]; return a, ok }})
			require.Equal(t, tt.wantClass != "", ok, "%+v", d)
			if !ok {
				return
			}
			require.Equal(t, tt.wantClass, d.Class)
			require.Equal(t, tt.wantReason, d.Reason)
			require.Contains(t, d.Message, tt.wantIn)
			require.Equal(t, "argocd/guestbook-eu-1", d.Application)
		})
	}
}

func TestClassifyApplicationBoundsMessages(t *testing.T) {
	t.Parallel()
	huge := make([]byte, 1<<20)
	for i := range huge {
		huge[i] = 'x'
	}
	app := &argocd.Application{Status: argocd.ApplicationStatus{Health: argocd.HealthStatus{Status: argocd.HealthDegraded, Message: string(huge)}}}
	d, ok := ClassifyApplication(ObservedApplication{Stage: "prod.eu-1", App: app})
	require.True(t, ok)
	require.LessOrEqual(t, len(d.Message), maxMessage+4)
}

func FuzzClassifyApplication(f *testing.F) {
	f.Add("prod.eu-1.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6", "alice", false, "OutOfSync", "Degraded", "Succeeded")
	f.Add("", "", true, "Synced", "Healthy", "Running")
	f.Fuzz(func(t *testing.T, promotion, by string, automated bool, sync, health, phase string) {
		app := &argocd.Application{Status: argocd.ApplicationStatus{Sync: argocd.SyncStatus{Status: sync},
			Health: argocd.HealthStatus{Status: health},
			OperationState: &argocd.OperationState{Phase: phase, Operation: argocd.Operation{
				InitiatedBy: argocd.OperationInitiator{Username: by, Automated: automated},
				Info:        []argocd.Info{{Name: argocd.PromotionInfoKey, Value: promotion}}}}}}
		d, ok := ClassifyApplication(ObservedApplication{Stage: "prod.eu-1", App: app})
		if ok && (d.Class == "" || d.Reason == "" || len(d.Message) > maxMessage+4) {
			t.Fatalf("a verdict needs a class, a reason and a bounded message: %+v", d)
		}
		if !ok && phase != "" && phase != argocd.OperationRunning && phase != argocd.OperationTerminating &&
			(sync == argocd.SyncStatusOutOfSync || health == argocd.HealthDegraded || health == argocd.HealthMissing) {
			t.Fatalf("a finished Application that is %s/%s got no verdict", sync, health)
		}
	})
}

func TestApplicationStatus(t *testing.T) {
	t.Parallel()
	require.Nil(t, ApplicationStatus(nil))
	var drifts []ApplicationDrift
	for i := range 12 {
		drifts = append(drifts, ApplicationDrift{Target: fmt.Sprintf("b-%02d", i), Application: "argocd/b", Class: ClassBroken, Reason: ReasonDegraded})
	}
	drifts = append(drifts,
		ApplicationDrift{Target: "z", Application: "argocd/z", Class: ClassForeign, Reason: ReasonManualSync},
		ApplicationDrift{Target: "a", Application: "argocd/a", Class: ClassIntended, Reason: ReasonBreakGlass})
	st := ApplicationStatus(drifts)
	require.Equal(t, int32(1), st.Foreign)
	require.Equal(t, int32(12), st.Broken)
	require.Equal(t, int32(1), st.Intended)
	require.Len(t, st.Examples, MaxExamples)
	require.Equal(t, "z", st.Examples[0].Target, "foreign first")
	require.Equal(t, "b-00", st.Examples[1].Target)
	require.Equal(t, drifts[0].Key(), drifts[1].Key(), "the same Application showing the same")
	require.NotEqual(t, drifts[0].Key(), drifts[12].Key())
}

func TestSetConditionWithApplications(t *testing.T) {
	t.Parallel()
	var conds []metav1.Condition
	apps := ApplicationStatus([]ApplicationDrift{{Target: "eu-1", Application: "argocd/g-eu-1", Class: ClassIntended, Reason: ReasonBreakGlass}})
	SetCondition(&conds, nil, apps, 1)
	require.Equal(t, metav1.ConditionFalse, conds[0].Status, "a break-glass sync is intended, not drift")
	apps = ApplicationStatus([]ApplicationDrift{{Target: "eu-1", Application: "argocd/g-eu-1", Class: ClassForeign,
		Reason: ReasonManualSync, Message: "alice synced revision old in Argo CD"}})
	SetCondition(&conds, nil, apps, 1)
	require.Equal(t, metav1.ConditionTrue, conds[0].Status)
	require.Equal(t, "ApplicationsChanged", conds[0].Reason)
	require.Contains(t, conds[0].Message, "argocd/g-eu-1: alice synced revision old")
}

func TestClassifyApplicationOnARealArgoCD(t *testing.T) {
	t.Parallel()
	const stage = "prod.eu-1"
	fleetPromo := stage + ".01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"
	const controller = "kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet"
	actorOf := func(p string) (string, bool) {
		if p == fleetPromo {
			return controller, true
		}
		return "", false
	}
	synced := func(by string) *argocd.OperationState {
		return &argocd.OperationState{Phase: argocd.OperationSucceeded, SyncResult: &argocd.SyncOperationResult{Revision: "v1"},
			Operation: argocd.Operation{InitiatedBy: argocd.OperationInitiator{Username: by},
				Info: []argocd.Info{{Name: argocd.PromotionInfoKey, Value: fleetPromo}}}}
	}
	healthy := argocd.ApplicationStatus{Sync: argocd.SyncStatus{Status: argocd.SyncStatusSynced}, Health: argocd.HealthStatus{Status: argocd.HealthHealthy}}
	classify := func(st argocd.ApplicationStatus, promoting bool) (ApplicationDrift, bool) {
		return ClassifyApplication(ObservedApplication{Target: "eu-1", Stage: stage, Promoting: promoting, ActorOf: actorOf,
			App: &argocd.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "g-eu-1"}, Status: st}})
	}

	st := healthy
	st.OperationState = synced(controller)
	_, ok := classify(st, false)
	require.False(t, ok, "the fleet's own sync: its Promotion's create-actor started it")

	// Argo CD keeps the info of the earlier Kargo sync when a user syncs.
	st.OperationState = synced("alice")
	d, ok := classify(st, false)
	require.True(t, ok)
	require.Equal(t, ReasonManualSync, d.Reason, "%+v", d)
	require.Contains(t, d.Message, "alice synced revision v1")

	// An Application never synced is the fleet's still to promote.
	_, ok = classify(argocd.ApplicationStatus{Sync: argocd.SyncStatus{Status: argocd.SyncStatusOutOfSync}}, false)
	require.False(t, ok)

	// While Kargo promotes the target it changes the Application.
	st = healthy
	st.OperationState = synced(controller)
	st.Sync.Status = argocd.SyncStatusOutOfSync
	_, ok = classify(st, true)
	require.False(t, ok)
	d, ok = classify(st, false)
	require.True(t, ok)
	require.Equal(t, ReasonOutOfSync, d.Reason)

	// Argo CD v3 leaves the Application's health message empty: the
	// resource's says why.
	st = healthy
	st.OperationState = synced(controller)
	st.Health.Status = argocd.HealthDegraded
	st.Resources = []argocd.ResourceStatus{{Kind: "ConfigMap", Namespace: "team-a", Name: "web-config"},
		{Kind: "Deployment", Namespace: "team-a", Name: "web",
			Health: &argocd.HealthStatus{Status: argocd.HealthDegraded, Message: `Deployment "web" exceeded its progress deadline`}}}
	d, ok = classify(st, false)
	require.True(t, ok)
	require.Equal(t, `Degraded: Deployment team-a/web: Deployment "web" exceeded its progress deadline`, d.Message)
}
