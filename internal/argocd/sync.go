package argocd

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// PromotionInfoKey names the operation info in which Kargo's argocd-update
// step records the Promotion that started a sync (Kargo v1.11.2).
const PromotionInfoKey = "kargo.akuity.io/promotion"

// KargoInitiator is the initiator Kargo's argocd-update step writes when
// the Promotion names no create-actor (Kargo's own Promotions).
const KargoInitiator = "kargo-controller"

// SyncInitiator is the initiator Kargo's argocd-update step writes for a
// Promotion with create-actor createActor: the actor Kargo hands the step
// (kargo.PromotionActor), else KargoInitiator.
func SyncInitiator(createActor string) string {
	if actor := kargo.PromotionActor(createActor); actor != "" {
		return actor
	}
	return KargoInitiator
}

// FromUnstructured decodes an Application read as an unstructured object,
// keeping only the fields Application holds.
func FromUnstructured(obj map[string]any) (*Application, error) {
	app := &Application{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, app); err != nil {
		return nil, fmt.Errorf("error reading Argo CD Application: %w", err)
	}
	return app, nil
}

// LastSync is the Application's newest sync operation, as its status
// records it.
type LastSync struct {
	// Promotion is the Kargo Promotion whose argocd-update step started
	// the sync; empty when Kargo did not.
	Promotion string
	// By is the initiator's user name: Kargo's Promotion create-actor or
	// KargoInitiator, an Argo CD user, or empty for an automated sync.
	By string
	// Automated says Argo CD's automated sync (auto-sync or self-heal)
	// started it.
	Automated bool
	// Phase and Message are the operation's phase and Argo CD's message.
	Phase, Message string
	// Revision is the revision the sync applied, or asked for while it
	// runs.
	Revision string
}

// Running reports whether the sync has not finished.
func (s LastSync) Running() bool {
	return s.Phase == "" || s.Phase == OperationRunning || s.Phase == OperationTerminating
}

// Failed reports whether the sync ended without applying its revision.
func (s LastSync) Failed() bool {
	return s.Phase == OperationFailed || s.Phase == OperationError
}

// LastSync returns the Application's newest sync operation: the one it
// asks for (spec-level operation, not picked up yet) or else the one its
// status records; false when it has none.
func (a *Application) LastSync() (LastSync, bool) {
	if op := a.Operation; op != nil {
		s := fromOperation(*op)
		return s, true
	}
	st := a.Status.OperationState
	if st == nil {
		return LastSync{}, false
	}
	s := fromOperation(st.Operation)
	s.Phase, s.Message = st.Phase, st.Message
	if r := st.SyncResult; r != nil {
		s.Revision = firstNonEmpty(r.Revision, r.Revisions)
	}
	return s, true
}

func fromOperation(op Operation) LastSync {
	s := LastSync{By: op.InitiatedBy.Username, Automated: op.InitiatedBy.Automated}
	for _, in := range op.Info {
		if in.Name == PromotionInfoKey {
			s.Promotion = in.Value
		}
	}
	if op.Sync != nil {
		s.Revision = firstNonEmpty(op.Sync.Revision, op.Sync.Revisions)
	}
	return s
}

// SyncedRevision is the revision the Application's live state was last
// compared with.
func (a *Application) SyncedRevision() string {
	return firstNonEmpty(a.Status.Sync.Revision, a.Status.Sync.Revisions)
}

func firstNonEmpty(one string, many []string) string {
	if one != "" {
		return one
	}
	return strings.Join(many, ",")
}

// PromotionStage returns the Stage a Kargo Promotion name belongs to: Kargo
// names Promotions "<stage>.<ULID>.<first 7 characters of the Freight>",
// and target Stage names hold dots themselves, so the Stage is everything
// before the last two dots. False when the name has no such form.
func PromotionStage(promotion string) (string, bool) {
	i := strings.LastIndexByte(promotion, '.')
	if i <= 0 {
		return "", false
	}
	j := strings.LastIndexByte(promotion[:i], '.')
	if j <= 0 {
		return "", false
	}
	return promotion[:j], true
}
