package v1alpha1

// Labels and annotations kargo-fleet puts on the Kargo objects it generates,
// so every part of the system selects them by label and never by name (Kargo
// renames Promotions).
const (
	// FleetStageLabel names the FleetStage a Stage, Promotion or FleetRollout
	// belongs to.
	FleetStageLabel = "fleet.kargo-fleet.io/fleetstage"
	// RoleLabel says what a generated Stage is: RoleWave or RoleTarget.
	RoleLabel = "fleet.kargo-fleet.io/role"
	// WaveLabel names the wave of a wave Stage, target Stage or Promotion.
	WaveLabel = "fleet.kargo-fleet.io/wave"
	// TargetLabel holds a target's id (a label-safe form of its name) on its
	// Stage and on its Promotions.
	TargetLabel = "fleet.kargo-fleet.io/target"
	// RolloutLabel names the FleetRollout a target Promotion belongs to.
	RolloutLabel = "fleet.kargo-fleet.io/rollout"
	// RollbackReasonAnnotation, on a rollback FleetRollout, says why it was
	// asked for, for people.
	RollbackReasonAnnotation = "fleet.kargo-fleet.io/reason"
	// TargetNameAnnotation holds a target's full name on its Stage.
	TargetNameAnnotation = "fleet.kargo-fleet.io/target-name"
	// PruneAnnotation marks a target Stage whose target left the selection; it
	// is deleted once no Promotion of it is in flight.
	PruneAnnotation = "fleet.kargo-fleet.io/prune"
	// RetryFreightAnnotation, on a FleetStage, names a Freight that breached a
	// failure threshold and may nevertheless be promoted to the fleet again:
	// held-back Freight is refused by the fleet-wave step otherwise.
	RetryFreightAnnotation = "fleet.kargo-fleet.io/retry-freight"
	// BreakGlassLabel, on a Promotion into a target Stage, names the
	// FleetStage whose target a user with the break-glass right promotes
	// directly; the admission guard admits it only with a reason and the
	// right, and the fleet then treats the target's Freight as intended.
	BreakGlassLabel = "fleet.kargo-fleet.io/break-glass"
	// PromotionGuardLabel, on a Project namespace, selects it for the
	// admission guard of Kargo Promotions: the controller sets it to
	// PromotionGuardEnforce in every namespace that holds a FleetStage,
	// unless an administrator set it to PromotionGuardOff.
	PromotionGuardLabel = "fleet.kargo-fleet.io/promotion-guard"
	// PromotionGuardEnforce sends the namespace's Promotion creates to the
	// admission guard.
	PromotionGuardEnforce = "enforce"
	// PromotionGuardOff keeps the namespace's Promotions away from the
	// admission guard; the post-hoc target guard alone protects the fleet.
	PromotionGuardOff = "off"
	// StageUIDAnnotation, on a target Promotion, holds the UID of the target
	// Stage it was created for: a Stage deleted and re-created under the
	// same name is another Stage, promoted again once.
	StageUIDAnnotation = "fleet.kargo-fleet.io/stage-uid"
)

// Generated Stage roles.
const (
	// RoleWave marks a wave Stage: its promotion runs the fleet-wave step.
	RoleWave = "wave"
	// RoleTarget marks a target Stage: one per target, the per-target template.
	RoleTarget = "target"
)

// Step server authentication: the controller writes a per-project token into
// a Secret of this name in every Project namespace that has a FleetStage; the
// shipped ClusterPromotionTasks send it with ${{ secret(...) }}.
const (
	// StepTokenSecretName is the Secret holding a Project's step token.
	StepTokenSecretName = "kargo-fleet-step-token"
	// StepTokenSecretKey is the key of the token in that Secret.
	StepTokenSecretKey = "token"
	// StepTokenRevokedAnnotation, on a Project namespace, revokes the
	// Project's step tokens. An RFC 3339 time revokes the tokens issued
	// before it (the controller mints a new one at once); any other value
	// revokes every token, and none is minted until the annotation is gone.
	StepTokenRevokedAnnotation = "fleet.kargo-fleet.io/step-token-revoked"
)
