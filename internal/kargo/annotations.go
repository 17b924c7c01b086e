package kargo

// Labels and annotations Kargo reads or writes.
const (
	// ProjectLabel marks a namespace as a Kargo Project.
	ProjectLabel = "kargo.akuity.io/project"
	// StageLabel is set by Kargo on every Promotion: the Stage's name.
	StageLabel = "kargo.akuity.io/stage"
	// ShardLabel names the shard of a Stage or Promotion. Kargo's webhooks
	// copy a Stage's spec.shard into it, on the Stage and on its
	// Promotions, and remove it for the default shard; a Kargo controller
	// started with SHARD_NAME=<shard> reconciles only the objects carrying
	// that value, the default controller those without it.
	ShardLabel = "kargo.akuity.io/shard"
	// AbortAnnotation asks Kargo to abort a Promotion; value "terminate".
	AbortAnnotation = "kargo.akuity.io/abort"
	// AbortTerminate is the abort action kargo-fleet requests.
	AbortTerminate = "terminate"
	// RefreshAnnotation, set to a new value, makes Kargo reconcile the object
	// at once; on a Running Promotion it re-runs the polling step.
	RefreshAnnotation = "kargo.akuity.io/refresh"
	// RollbackAnnotation marks a Promotion as a rollback; steps see it as
	// ctx.meta.promotion.rollback.
	RollbackAnnotation = "kargo.akuity.io/rollback"
	// DescriptionAnnotation is shown by the Kargo UI as an object's
	// description.
	DescriptionAnnotation = "kargo.akuity.io/description"
	// CreateActorAnnotation is added by Kargo's webhook: who created an object.
	CreateActorAnnotation = "kargo.akuity.io/create-actor"
	// PromoteVerb is the custom RBAC verb Kargo checks on stages before it
	// admits a Promotion (or an update of one, or an approval).
	PromoteVerb = "promote"
	// AutoPromotionHoldAnnotation is set by Kargo's webhook on a Promotion of
	// Freight that is not the auto-promotion candidate (value: the origin key,
	// e.g. Warehouse/apps); once terminal it holds auto-promotion of that origin.
	AutoPromotionHoldAnnotation = "kargo.akuity.io/auto-promotion-hold"
	// AutoPromotionResumeAnnotation is set by Kargo's webhook on a Promotion of
	// the auto-promotion candidate; once terminal it releases the hold.
	AutoPromotionResumeAnnotation = "kargo.akuity.io/auto-promotion-resume"
	// StageAnnotation is set by Kargo's webhook on every Promotion: the
	// Stage's full name (the label may be shortened).
	StageAnnotation = "kargo.akuity.io/stage"
	// ActorKubernetesPrefix prefixes the Kubernetes user name in the
	// create-actor annotation and abort requests.
	ActorKubernetesPrefix = "kubernetes:"
)

// Annotations Kargo puts on its own Events (Kargo v1.11.2
// api/v1alpha1/event.go); kargo-fleet's Events about Kargo objects carry
// the ones that apply, so tools that read Kargo's Events find them.
const (
	// EventProjectAnnotation names the Project an Event is about.
	EventProjectAnnotation = "event.kargo.akuity.io/project"
	// EventStageAnnotation names the Stage an Event is about.
	EventStageAnnotation = "event.kargo.akuity.io/stage-name"
	// EventFreightAnnotation names the Freight an Event is about.
	EventFreightAnnotation = "event.kargo.akuity.io/freight-name"
)
