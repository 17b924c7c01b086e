package v1alpha1

// Condition types. Polarity is stated for each: "normal-true" conditions are
// True when all is well, "normal-false" ones are True only when something needs
// attention.
const (
	// ReadyCondition (normal-true) summarises the object: True when its targets
	// are resolved and its Kargo Stages are in step with the spec.
	ReadyCondition = "Ready"

	// TargetsResolvedCondition (normal-true) is True when every inventory source
	// was read and the selection and wave plan were computed without error.
	TargetsResolvedCondition = "TargetsResolved"

	// StagesSyncedCondition (normal-true) is True when every wave Stage and
	// target Stage exists and matches what the spec renders.
	StagesSyncedCondition = "StagesSynced"

	// ProgressingCondition (normal-true while a rollout runs) is True while a
	// FleetRollout is moving targets.
	ProgressingCondition = "Progressing"

	// ThresholdBreachedCondition (normal-false) is True once a wave or the fleet
	// crossed its failure threshold.
	ThresholdBreachedCondition = "ThresholdBreached"

	// RollbackCondition (normal-false), on a forward FleetRollout, is True
	// once a rollback of it exists (the message names it), and False when an
	// automatic rollback was due but impossible (the reason says why).
	RollbackCondition = "Rollback"

	// FreightStatusLargeCondition (normal-false) is True when a Freight
	// promoted to every Stage of the Project would carry a status close to
	// the apiserver's object size limit: Kargo records one entry per Stage
	// on the Freight, so past the limit it can no longer record where the
	// Freight is and was verified.
	FreightStatusLargeCondition = "FreightStatusLarge"

	// DriftedCondition (normal-false), on a FleetStage, is True when targets
	// run Freight that neither status.lastGoodFreight nor an open rollout
	// explains (status.drift counts and names them).
	DriftedCondition = "Drifted"
)

// Condition reasons.
const (
	// TargetsDriftedReason: targets run Freight the fleet does not intend.
	TargetsDriftedReason = "TargetsDrifted"
	// ApplicationsChangedReason: every target runs intended Freight, but
	// target Applications show changes the fleet did not make or are
	// Degraded or Missing (status.applications).
	ApplicationsChangedReason = "ApplicationsChanged"
	// NoDriftReason: every target runs intended or explained Freight.
	NoDriftReason = "NoDrift"
	// ReconciledReason: the object matches its spec.
	ReconciledReason = "Reconciled"
	// InvalidSpecReason: the spec cannot be acted on; the message names the field.
	InvalidSpecReason = "InvalidSpec"
	// SourceUnavailableReason: an inventory source could not be read.
	SourceUnavailableReason = "SourceUnavailable"
	// StageSourceNotFoundReason: the Stage named by spec.stage.fromStage does not exist.
	StageSourceNotFoundReason = "StageSourceNotFound"
	// SyncFailedReason: writing a generated Stage failed.
	SyncFailedReason = "SyncFailed"
	// PruningReason: Stages of departed targets wait for in-flight Promotions.
	PruningReason = "Pruning"
	// WaveRunningReason: a wave is promoting targets.
	WaveRunningReason = "WaveRunning"
	// PausedReason: the rollout is paused on request.
	PausedReason = "Paused"
	// WaitingForApprovalReason: a wave waits for `kargo approve`.
	WaitingForApprovalReason = "WaitingForApproval"
	// RolloutSucceededReason: every wave passed.
	RolloutSucceededReason = "RolloutSucceeded"
	// RolloutFailedReason: the rollout stopped without passing every wave.
	RolloutFailedReason = "RolloutFailed"
	// RollbackCreatedReason: a rollback of the rollout exists.
	RollbackCreatedReason = "RollbackCreated"
	// NoLastGoodFreightReason: an automatic rollback was due, but the
	// FleetStage records no last good Freight other than the rollout's own.
	NoLastGoodFreightReason = "NoLastGoodFreight"
	// WithinLimitReason: the Project's Stages leave a Freight's status well
	// under the object size limit.
	WithinLimitReason = "WithinLimit"
	// AnalysisFailedReason: a wave's analysis failed on a metric; the
	// message names the metric and its value.
	AnalysisFailedReason = "AnalysisFailed"
	// NearObjectLimitReason: a Freight's status would come close to the
	// object size limit.
	NearObjectLimitReason = "NearObjectLimit"
)
