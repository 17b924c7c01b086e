package drift

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxMessage bounds a drift message: it quotes Argo CD's health message
// and names users and revisions, all written by others.
const maxMessage = 512

// Class says what an Application's observed state means for its target.
type Class string

// Classes of observed state.
const (
	// ClassIntended: changed outside the waves, on purpose: a break-glass
	// Promotion kargo-fleet admitted.
	ClassIntended Class = "Intended"
	// ClassForeign: changed by anything else: a sync or rollback made in
	// Argo CD, Argo CD's automated sync, an edit of a live resource, another
	// Kargo Stage's argocd-update.
	ClassForeign Class = "Foreign"
	// ClassBroken: the Application is Degraded or its resources are
	// Missing.
	ClassBroken Class = "Broken"
)

// Reasons of an ApplicationDrift.
const (
	ReasonBreakGlass    = "BreakGlass"
	ReasonOtherStage    = "OtherKargoStage"
	ReasonManualSync    = "ManualSync"
	ReasonAutomatedSync = "AutomatedSync"
	ReasonOutOfSync     = "OutOfSync"
	ReasonDegraded      = "Degraded"
	ReasonMissing       = "Missing"
)

// Origin says whose a Promotion of a target Stage is.
type Origin int

// Origins of a target Stage's Promotions.
const (
	// OriginUnknown: not known to the fleet (deleted since, or not seen
	// yet): judged by the target Stage's own drift detection.
	OriginUnknown Origin = iota
	// OriginFleet: made by kargo-fleet's controller (marked).
	OriginFleet
	// OriginBreakGlass: a break-glass Promotion kargo-fleet admitted.
	OriginBreakGlass
)

// ObservedApplication is one target's Application as observed on Argo CD.
type ObservedApplication struct {
	// Target and Stage name the target and its target Stage.
	Target, Stage string
	// App is the Application.
	App *argocd.Application
	// Origins maps the Promotions of the target Stage the fleet knows to
	// their origin.
	Origins map[string]Origin
	// ActorOf returns the create-actor of a Kargo Promotion ("" for
	// Kargo's own) and whether the Promotion was found; nil: none is.
	ActorOf func(promotion string) (string, bool)
	// Promoting says a Promotion of the target Stage runs: Kargo is
	// changing the Application (pinning a revision, syncing), so what it
	// shows now is the fleet's work in progress.
	Promoting bool
}

// kargoStarted reports whether Kargo's argocd-update started the sync:
// the operation names a Promotion and its initiator is the one Kargo
// writes for that Promotion (kargo.PromotionActor of its create-actor,
// else Kargo's controller). Argo CD keeps the previous operation's info
// when a user syncs, so a Promotion in the info alone does not make the
// sync Kargo's.
func (o ObservedApplication) kargoStarted(sync argocd.LastSync) bool {
	if sync.Promotion == "" {
		return false
	}
	if o.ActorOf != nil {
		if actor, found := o.ActorOf(sync.Promotion); found {
			return sync.By == argocd.SyncInitiator(actor)
		}
	}
	// The Promotion is gone: the initiators only Kargo writes. A one-colon
	// create-actor ("kubernetes:alice") reaches Argo CD as "alice", which
	// an Argo CD user of that name could be too: without the Promotion it
	// counts as a user's.
	return sync.By == argocd.KargoInitiator || kargoActor(sync.By)
}

// kargoActor reports whether name is a Kargo actor no Argo CD user name
// looks like: a create-actor Kargo hands on whole because it holds more
// than one colon ("kubernetes:system:serviceaccount:<ns>:<name>"), or
// Kargo's own admin.
func kargoActor(name string) bool {
	for _, prefix := range []string{"kubernetes:", "email:", "subject:", "controller:"} {
		if strings.HasPrefix(name, prefix) && strings.Count(name, ":") > 1 {
			return true
		}
	}
	return name == "admin"
}

// ApplicationDrift is what an Application shows that the fleet did not do.
type ApplicationDrift struct {
	Target, Stage string
	// Application is "<namespace>/<name>".
	Application string
	Class       Class
	Reason      string
	Message     string
	// SelfHeals says Argo CD's automated sync with self-heal is on: it
	// brings an edited live resource back to Git by itself.
	SelfHeals bool
}

// Reverts returns the Application changes a Revert drift policy reverts,
// as drifts of their targets to promote intended back to: foreign ones,
// except a live resource edit that Argo CD's self-heal undoes by itself
// (reverting it too would race Argo CD). Broken Applications are a
// rollout's to judge, break-glass is intended. None before the fleet
// intends a Freight.
func Reverts(drifts []ApplicationDrift, intended string) []Drift {
	if intended == "" {
		return nil
	}
	var out []Drift
	for _, d := range drifts {
		if d.Class != ClassForeign || (d.Reason == ReasonOutOfSync && d.SelfHeals) {
			continue
		}
		out = append(out, Drift{Target: d.Target, Stage: d.Stage, Freight: intended, Intended: intended, Application: d.Key()})
	}
	return out
}

// ClassifyApplication reads what an Application shows beyond what the fleet
// did to it: the newest sync's initiator first (who changed it), then its
// sync status (a live resource changed outside Git), then its health. False
// when it shows nothing: its newest sync is the fleet's (or a Promotion of
// the target Stage the fleet does not know: the target Stage's own drift
// detection judges those) and it is Synced and not Degraded or Missing, or
// a sync is still running.
func ClassifyApplication(o ObservedApplication) (ApplicationDrift, bool) {
	d := ApplicationDrift{Target: o.Target, Stage: o.Stage, Application: o.App.Namespace + "/" + o.App.Name,
		SelfHeals: o.App.SelfHeals()}
	sync, ok := o.App.LastSync()
	switch {
	case o.Promoting || (ok && sync.Running()):
		return d, false
	case !ok && o.App.Status.Sync.Status == argocd.SyncStatusOutOfSync:
		// Never synced: an Application the fleet has not promoted yet.
		return d, false
	}
	if ok && !o.kargoStarted(sync) {
		// A user's or Argo CD's sync that kept the info of an earlier
		// Kargo one.
		sync.Promotion = ""
	}
	if ok {
		switch stage, isPromotion := argocd.PromotionStage(sync.Promotion); {
		case sync.Promotion != "" && isPromotion && stage != o.Stage:
			return d.with(ClassForeign, ReasonOtherStage, "synced revision %s for Kargo Promotion %s of Stage %s, not of this target's Stage",
				orNone(sync.Revision), sync.Promotion, stage)
		case sync.Promotion != "" && o.Origins[sync.Promotion] == OriginBreakGlass:
			return d.with(ClassIntended, ReasonBreakGlass, "synced revision %s for break-glass Promotion %s by %s",
				orNone(sync.Revision), sync.Promotion, orNone(sync.By))
		case sync.Promotion == "" && sync.Automated:
			return d.with(ClassForeign, ReasonAutomatedSync, "Argo CD's automated sync applied revision %s", orNone(sync.Revision))
		case sync.Promotion == "":
			return d.with(ClassForeign, ReasonManualSync, "%s synced revision %s in Argo CD, not through Kargo",
				orNone(sync.By), orNone(sync.Revision))
		}
	}
	switch {
	case o.App.Status.Sync.Status == argocd.SyncStatusOutOfSync:
		return d.with(ClassForeign, ReasonOutOfSync, "its live resources differ from revision %s: changed outside Git",
			orNone(o.App.SyncedRevision()))
	case o.App.Status.Health.Status == argocd.HealthDegraded:
		return d.with(ClassBroken, ReasonDegraded, "Degraded: %s", orNone(o.App.HealthMessage()))
	case o.App.Status.Health.Status == argocd.HealthMissing:
		return d.with(ClassBroken, ReasonMissing, "its resources are Missing: %s", orNone(o.App.HealthMessage()))
	}
	return d, false
}

func (d ApplicationDrift) with(c Class, reason, format string, args ...any) (ApplicationDrift, bool) {
	d.Class, d.Reason, d.Message = c, reason, strutil.Ellipsis(fmt.Sprintf(format, args...), maxMessage)
	return d, true
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// classOrder puts foreign Applications first in a status's examples, then
// broken, then intended ones.
var classOrder = map[Class]int{ClassForeign: 0, ClassBroken: 1, ClassIntended: 2}

// ApplicationStatus returns the FleetStage status summary of what the
// targets' Applications show: counts by class and the first MaxExamples,
// foreign first; nil when none shows anything.
func ApplicationStatus(drifts []ApplicationDrift) *fleetv1alpha1.ApplicationDriftStatus {
	if len(drifts) == 0 {
		return nil
	}
	sorted := slices.Clone(drifts)
	slices.SortFunc(sorted, func(a, b ApplicationDrift) int {
		return cmp.Or(cmp.Compare(classOrder[a.Class], classOrder[b.Class]), cmp.Compare(a.Target, b.Target),
			cmp.Compare(a.Application, b.Application))
	})
	st := &fleetv1alpha1.ApplicationDriftStatus{}
	for _, d := range sorted {
		switch d.Class {
		case ClassForeign:
			st.Foreign++
		case ClassBroken:
			st.Broken++
		case ClassIntended:
			st.Intended++
		}
		if len(st.Examples) < MaxExamples {
			st.Examples = append(st.Examples, fleetv1alpha1.ApplicationDrift{Target: d.Target, Stage: d.Stage,
				Application: d.Application, Class: string(d.Class), Reason: d.Reason, Message: d.Message})
		}
	}
	return st
}

// Key identifies what an Application shows: the same Application, class,
// reason and message. Events are recorded once per key.
func (d ApplicationDrift) Key() string {
	sum := sha256.Sum256([]byte(d.Application + "\x00" + string(d.Class) + "\x00" + d.Reason + "\x00" + d.Message))
	return hex.EncodeToString(sum[:])[:40]
}
