package v1alpha1

// Every label, annotation and finalizer kargo-fleet reads or writes on an
// object is declared in this file, as Kargo keeps its own in one place: a
// package that needs one imports the API, never a controller
// (`make verify` checks it: hack/keycheck).

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

// Labels and annotations on targets and on Project namespaces, which
// administrators write.
const (
	// FrozenLabel excludes a target from every FleetStage while it is present.
	FrozenLabel = "fleet.kargo-fleet.io/frozen"
	// ComplianceHoldLabel excludes a target from every FleetStage while present.
	ComplianceHoldLabel = "fleet.kargo-fleet.io/compliance-hold"
	// TeamLabel is the target label team scoping reads.
	TeamLabel = "fleet.kargo-fleet.io/team"
	// AllowedTeamsAnnotation, on a Kargo Project namespace, lists the teams
	// (comma separated) whose targets FleetStages of that Project may select.
	// Only administrators can change namespaces, which is why it lives there.
	AllowedTeamsAnnotation = "fleet.kargo-fleet.io/allowed-teams"
)

// Finalizers.
const (
	// FleetStageFinalizer lets the FleetStage reconciler restore downstream
	// Stages it re-pointed before a FleetStage goes away.
	FleetStageFinalizer = "fleet.kargo-fleet.io/fleetstage"
	// AbortOnDeleteFinalizer is on every unfinished FleetRollout: deleting
	// one aborts it. The controller aborts its running target Promotions,
	// records it as Aborted in the FleetStage's history (so the step server
	// never starts it again under the same name), then removes the
	// finalizer. A rollout loses the finalizer once it has finished.
	AbortOnDeleteFinalizer = "fleet.kargo-fleet.io/abort-on-delete"
)

// Annotations and labels on generated and adopted Stages.
const (
	// RepointedAnnotation records, on a Stage downstream of an adopted Stage,
	// "<fleetstage>/<adopted stage>": the FleetStage re-pointed the Stage's
	// Freight source from the adopted Stage to its last wave Stage, and
	// restores it when the FleetStage is deleted.
	RepointedAnnotation = "fleet.kargo-fleet.io/repointed-from"
	// ShardAnnotation, on a generated Stage, holds the shard kargo-fleet
	// rendered into its spec.shard. Its presence says kargo-fleet owns the
	// shard; without it (no spec.shards) the Stage keeps whatever shard it
	// has, as before shards were managed.
	ShardAnnotation = "fleet.kargo-fleet.io/shard"
)

// Labels and annotations on Promotions into target Stages: what they claim
// counts only with the controller's mark (MarkAnnotation) or, for
// break-glass, the creator's right, never by the label alone.
const (
	// MarkAnnotation holds the controller's mark on a Promotion it created:
	// a keyed hash of its Stage, Freight and the decision it carries out.
	MarkAnnotation = "fleet.kargo-fleet.io/mark"
	// UndoesLabel holds, on a Promotion the target guard created to undo a
	// refused one that succeeded before it could be aborted, a hash of the
	// refused Promotion's name: it makes the undo happen once.
	UndoesLabel = "fleet.kargo-fleet.io/undoes"
	// RevertLabel holds, on a Promotion that promotes the intended Freight
	// back to a drifted target, the drift's key: it makes each drift
	// reverted once.
	RevertLabel = "fleet.kargo-fleet.io/reverts-drift"
	// BreakGlassReasonAnnotation, on a Promotion into a target Stage, asks
	// for a break-glass Promotion and says why; the user creating the
	// Promotion must hold the break-glass verb on the FleetStage.
	BreakGlassReasonAnnotation = "fleet.kargo-fleet.io/break-glass-reason"
)

// Labels and annotations on FleetRollouts, and on the Promotions they
// create. FleetRollouts also carry FleetStageLabel, which the generated
// Stages and Promotions share.
const (
	// FreightLabel holds a label-safe form of the rollout's Freight name (see
	// fleetrollout.FreightLabelValue), so the rollouts of a (FleetStage, Freight) pair are
	// one label-selected list away. Every rollout carries it, rollbacks
	// included.
	FreightLabel = "fleet.kargo-fleet.io/freight"
	// WavePromotionLabel, on a Promotion of a wave Stage that kargo-fleet
	// created to hand the Freight on from the previous wave, names the
	// rollout that did.
	WavePromotionLabel = "fleet.kargo-fleet.io/promoted-by"
	// RecoversAnnotation, on a wave Stage Promotion kargo-fleet created
	// because the wave's previous one ended Errored, names that errored
	// Promotion: each errored Promotion is recovered once.
	RecoversAnnotation = "fleet.kargo-fleet.io/recovers"
	// StepKeyAnnotation records the Promotion and step alias that created
	// the rollout ("<promotion>/<alias>"), which makes step requests
	// idempotent.
	StepKeyAnnotation = "fleet.kargo-fleet.io/step-key"
	// RequestedAtAnnotation records when the rollout was built, to the
	// nanosecond (RFC 3339), by the clock of the process that built it. It
	// orders rollouts created within the same second, which
	// creationTimestamp cannot; creationTimestamp, set by the API server,
	// still decides first.
	RequestedAtAnnotation = "fleet.kargo-fleet.io/requested-at"
	// AnyFreightAnnotation, "true" on a rollback, allows its Freight to be
	// held back after a breach or not to have passed the fleet: whoever
	// asked chose that Freight deliberately (the fleet-rollback step's
	// anyFreight, kargo-fleet rollback --any-freight).
	AnyFreightAnnotation = "fleet.kargo-fleet.io/any-freight"
	// IntentActorAnnotation records who last set spec.intent (pause,
	// resume, abort), as Kargo names actors: "kubernetes:<user>". Whoever
	// changes the intent sets it in the same write; the rollout's Events
	// name it.
	IntentActorAnnotation = "fleet.kargo-fleet.io/intent-actor"
	// WaveRequestAnnotationPrefix prefixes the annotation recording that a
	// Promotion of a wave Stage asks the wave to run:
	// wave.fleet.kargo-fleet.io/<wave>: <promotion name>. The rollout
	// controller runs only requested waves and refreshes that Promotion when
	// the wave finishes.
	WaveRequestAnnotationPrefix = "wave.fleet.kargo-fleet.io/"
	// ApprovalsAnnotationPrefix prefixes the annotation holding a wave's
	// approvals of the rollout: approvals.fleet.kargo-fleet.io/<wave>: a
	// JSON list of {user, groups, at}. `kargo-fleet approve` appends one
	// entry as the approver; the FleetRollout webhook admits only an
	// appended entry naming the requesting user with their groups, who holds
	// the verb approve on the FleetStage, and never a change of the others.
	ApprovalsAnnotationPrefix = "approvals.fleet.kargo-fleet.io/"
)
